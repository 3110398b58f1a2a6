"""Arena's stdlib ACP runner against verifiers' own, in the harness image: one scripted agent, one host
driver, every packet back and every line the agent read must be the same (`arena_kit.harnesses.acp_runner`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arena_kit.harnesses.acp_runner import REPLACES_SHA256, RUNNER_SOURCE

pytestmark = pytest.mark.docker

HERE = Path(__file__).parent


def _run(image: str, variant: str, runner: str, tmp_path: Path) -> tuple[list[dict], list[dict]]:
    """(the packets the driver got back, then its gate log; the lines the agent read), one box per run."""
    verifiers = (
        f'"$(cat /opt/vf-uv/arena-interpreters/vf-scripts/{REPLACES_SHA256})" /opt/vf-scripts/{REPLACES_SHA256}.py'
    )
    argv = verifiers if runner == "verifiers" else "python3 -I /arena/runner.py"
    (tmp_path / "runner.py").write_bytes(RUNNER_SOURCE)  # what the lean box runs from its argv (`python3 -I -c`)
    script = f"cd /tmp && AGENT_LOG=/tmp/agent.log python3 /x/drive_runner.py {variant} {argv} && echo --- && cat /tmp/agent.log"
    done = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "--label",
            "arena.managed=true",
            "-v",
            f"{HERE}:/x:ro",
            "-v",
            f"{tmp_path}:/arena:ro",
            "--entrypoint",
            "sh",
            image,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    host, agent = done.stdout.split("---\n")
    return [json.loads(line) for line in host.splitlines()], [
        json.loads(line) for line in agent.splitlines() if line != "EOF"
    ]


def _segments(agent: list[dict]) -> list[list[str]]:
    """The agent's transcript cut at each request the client sent; within a cut, answers and notifications
    in any order (the client writes them from concurrent tasks: a gate's stop answers the permission ask
    and cancels the turn at once, in either order, in verifiers' runner as in Arena's)."""
    cuts: list[list[str]] = [[]]
    for line in agent:
        if "method" in line and "id" in line:
            cuts.append([])
        cuts[-1].append(json.dumps(line, sort_keys=True))
    return [sorted(cut) for cut in cuts]


@pytest.mark.parametrize("variant", ["full", "bare", "stop"])
def test_the_stdlib_runner_answers_the_host_and_the_agent_as_verifiers_runner_does(images, variant, tmp_path):
    want = _run(images["harness"], variant, "verifiers", tmp_path)
    got = _run(images["harness"], variant, "arena", tmp_path)
    assert got[0] == want[0]
    assert _segments(got[1]) == _segments(want[1])
    packets, agent = want
    # Not vacuous: two turns ran through a gate, steering, an unknown operation and a close.
    replies = [p for p in packets if isinstance(p.get("result"), dict) and "reply" in p["result"]]
    assert len(replies) == 2 and packets[-1]["exit"] == 0
    methods = [line.get("method") for line in agent]
    assert methods.count("session/prompt") == 2 and "session/close" in methods and "_session/steering" in methods
    if variant == "stop":
        assert [r["result"]["stop_reason"] for r in replies] == [
            "cancelled",
            "cancelled",
        ] and "session/cancel" in methods
    elif variant == "full":
        assert [r["result"]["reply"] for r in replies] == ["final reply", "final reply"]
        assert {a["tool_call_id"] for a in packets[-1]["gate"]} == {"c-allow", "c-deny", "c-stop"}
    else:
        assert packets[-1]["gate"] == []  # no gate: the agent's own allow option
