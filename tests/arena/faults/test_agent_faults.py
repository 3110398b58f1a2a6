"""An agent that breaks its own box ends with its own stop condition, reward 0 and no retry, counted as
the agent's: a memory hog that takes its runner down (`boxoom_error`), `kill -9 $PPID`
(`agentkilledbox_error`) and `kill -9 -1` (the same), on the stock `bash` harness, the lean `arena-bash`
one and claude_code, each through Arena's own launcher with its real retry table (`arena_kit.box.faults`)."""

import uuid

import pytest

from arena.evalrun import EvalRequest, run_evals
from arena.server import start_in_thread
from arena_kit.policy import Answer, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit import SUPPORT
from arena_testkit.rollouts import tool_results

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MEMORY_GB = 0.5
LIMIT_PROBE = "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
ATTACKS = {
    # The kernel's OOM killer takes the largest process unless told otherwise: the hog first makes its
    # runner the one to go (an agent may raise any of its own processes' scores), then outgrows the box.
    "oom": (
        "echo 1000 > /proc/$PPID/oom_score_adj; python3 -c 'b = bytearray(900 * 1024 * 1024)'; echo SURVIVED",
        "boxoom_error",
    ),
    "kill-runner": ("kill -9 $PPID; echo SURVIVED", "agentkilledbox_error"),
    "kill-all": ("kill -9 -1; echo SURVIVED", "agentkilledbox_error"),
}
CASES = [
    pytest.param("bash", "stock", id="bash-stock"),
    pytest.param("arena-bash", "lean", id="arena-bash-lean"),
    pytest.param("claude_code", "stock", id="claude_code-stock"),
    pytest.param("claude_code", "lean", id="claude_code-lean"),
]


@pytest.mark.parametrize(("harness", "docker"), CASES)
def test_an_agent_that_breaks_its_own_box_gets_its_own_stop_reward_zero_and_no_retry(harness, docker, images, tmp_path):
    policies = {
        f"arena/agent-fault-{name}": ScriptedPolicy(
            [RunShell(LIMIT_PROBE), RunShell("echo arena-smoke-ok > smoke.txt"), RunShell(command), Answer("DONE")]
        )
        for name, (command, _) in ATTACKS.items()
    }
    with start_in_thread(policies=policies) as server:
        requests = [
            EvalRequest(
                taskset="arena-smoke",
                harness=harness,
                model=model,
                image=images["harness"],
                base_url=server.url,
                run_name=f"agent-fault-{name}-{harness}-{uuid.uuid4().hex[:6]}",
                output_dir=tmp_path,
                max_concurrent=1,
                env={"PYTHONPATH": str(SUPPORT)},
                runtime_args={"memory": MEMORY_GB},
                env_args={"docker": docker},
                deadline_s=420,
            )
            for model, name in zip(policies, ATTACKS)
        ]
        outcomes = run_evals(requests, parallel=len(requests))
    for outcome, (name, (_, stop)) in zip(outcomes, ATTACKS.items()):
        assert not outcome.timed_out and outcome.returncode == 0, (name, outcome.run_dir)
        [episode] = outcome.episodes
        results = tool_results(outcome.run_dir)
        assert str(int(MEMORY_GB * 1024**3)) in results[0], (name, results)  # the box's memory limit was in force
        assert episode.stop_condition == stop, (name, episode.stop_condition, episode.errors)
        assert episode.reward == 0.0 and episode.retries == 0 and len(episode.errors) == 1, (name, episode.errors)
        assert episode.agent_fault is not None and not episode.failed and episode.infra_fault is None
        assert outcome.agent_faults == [episode] and outcome.failures == [] and outcome.fail_closed is None
        assert not any("SURVIVED" in r for r in results), (name, results)  # the runner really died in the command
