"""Whole bash rollouts of the smoke taskset through vf-eval on both docker paths: the same tool calls, tool
results and scores, the lean one in a borrowed lean box with no route out."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest

from arena.server import start_in_thread
from arena_kit.policy import Answer, CallTool, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit.lean_evals import run_path, smoke_request

pytestmark = pytest.mark.docker

PROBE = (
    "python3 -c \"import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('https://pypi.org/simple/', timeout=4)\" "
    "2>/dev/null && echo EGRESS-OPEN || echo EGRESS-SHUT"
)
SCRIPT = ScriptedPolicy(
    [
        RunShell(f"echo arena-smoke-ok > smoke.txt && cat smoke.txt; {PROBE}"),
        CallTool("note", {"text": "hello from the policy"}),
        RunShell("echo ARENA-FORBIDDEN > bad.txt"),
        Answer("DONE"),
    ]
)


def conversation(run_dir: Path) -> tuple[list[Any], bool]:
    """The last request's messages (every tool call and result the model saw) and the box's `borrowed` stamp."""
    [line] = (run_dir / "traces.jsonl").read_text().splitlines()
    [trace] = json.loads(line)["traces"]
    calls: list[Any] = []
    for node in trace["nodes"]:
        message = node.get("message") or node
        if message.get("role") == "tool":
            calls.append(("result", message.get("content")))
        for call in message.get("tool_calls") or []:
            calls.append(
                ("call", call["function"]["name"] if "function" in call else call.get("name"), call.get("arguments"))
            )
    return calls, trace["agent"]["runtime"]["borrowed"]


def test_a_lean_bash_rollout_matches_the_stock_one_call_for_call_and_score_for_score(images, tmp_path):
    outcomes = {}
    with start_in_thread(policies={"arena/lean-smoke": SCRIPT}) as server:
        for path in ("stock", "lean"):
            request = smoke_request(
                server.url,
                "arena/lean-smoke",
                images["harness"],
                tmp_path,
                f"smoke-{path}-{uuid.uuid4().hex[:8]}",
                runtime_args={"allow": []},
            )
            outcomes[path] = run_path(request, path)  # type: ignore[arg-type]
    for outcome in outcomes.values():
        outcome.raise_for_failures()
    (stock,), (lean,) = outcomes["stock"].episodes, outcomes["lean"].episodes
    assert (lean.rewards, lean.metrics, lean.stop_condition) == (stock.rewards, stock.metrics, stock.stop_condition)
    assert (
        lean.rewards["wrote_file"]["score"] == 1.0
        and lean.metrics["notes"] == 1.0
        and lean.metrics["forbidden_ran"] == 0.0
    )
    assert lean.info["denied"] == stock.info["denied"]
    stock_calls, stock_borrowed = conversation(outcomes["stock"].run_dir)
    lean_calls, lean_borrowed = conversation(outcomes["lean"].run_dir)
    assert lean_calls == stock_calls and len(lean_calls) >= 6
    assert "EGRESS-SHUT" in json.dumps(lean_calls)
    assert (stock_borrowed, lean_borrowed) == (False, True)  # each path really ran
    left = docker.from_env().api.containers(
        all=True, filters={"label": f"verifiers.run={outcomes['lean'].run_dir.name}"}
    )
    assert left == []  # the env removed its lean box after scoring
