"""Real rollouts of bash, claude_code and codex in our image, driven by the embedded model server.

Each rollout runs with every container's outside traffic cut (setup included), so a harness setup
that tried to download anything would fail; the agent's own probe proves the cut was in force.
The scripted policy writes a file, calls an MCP tool, and tries a command the task's
`@vf.intercept` hook denies before it runs.
"""

import pytest

from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, CallTool, RunShell
from arena.server import start_in_thread
from arena_testkit.rollouts import container_egress_cut, smoke_eval, tool_results

pytestmark = pytest.mark.docker

PROBE = "curl -k -sS -m 4 -o /dev/null https://pypi.org/simple/ 2>/dev/null && echo EGRESS-OPEN || echo EGRESS-CUT"
SCRIPT = ScriptedPolicy(
    [
        RunShell(f"echo arena-smoke-ok > smoke.txt && cat smoke.txt; {PROBE}"),
        CallTool("note", {"text": "hello from the policy"}),
        RunShell("echo ARENA-FORBIDDEN > bad.txt"),
        Answer("DONE"),
    ]
)


@pytest.mark.parametrize("harness", ["bash", "claude_code", "codex"])
def test_harness_rollout_runs_offline_uses_mcp_and_honours_a_denial(harness, images, tmp_path, egress_lock):
    with start_in_thread(policies={"arena/smoke": SCRIPT}) as server, container_egress_cut(egress_lock):
        outcome = smoke_eval(server.url, harness, "arena/smoke", images["harness"], tmp_path)

    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.stop_condition == "agent_completed"
    assert episode.rewards["wrote_file"]["score"] == 1.0  # the shell command ran in the container
    assert episode.metrics["notes"] == 1.0  # the MCP tool was called and its state synced back
    assert episode.metrics["forbidden_ran"] == 0.0  # the denied command did not run
    assert len(episode.info["denied"]) == 1
    results = tool_results(outcome.run_dir)
    assert any("arena-smoke-ok" in r and "EGRESS-CUT" in r for r in results), results
    assert any("noted: hello from the policy" in r for r in results), results
    assert any("DENIED by the arena smoke rule" in r for r in results), results
    assert episode.timing["setup"]["end"] > episode.timing["setup"]["start"]
