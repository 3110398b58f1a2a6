"""Fidelity of verifiers' node harnesses on the lean path: claude_code and codex give the same rollout in
a lean box (Arena's engine client, read-only root, its stdlib ACP runner, which drives Claude Code and Codex
without their node ACP adapters) as on verifiers' own docker runtime (`[env] docker = "stock"`).

Same task, same scripted model server, same harness: the whole message graph must match once the
values drawn afresh for every rollout are named alike on both sides (the harness's home under /tmp
or the workdir, ids the model server derives from a request that names that home, a tool's measured
wall time, codex's random id for a command's output): two rollouts down the same path differ in
exactly those. Rewards, metrics, stop, errors, info and the rewrite audits (less their ids, clocks and
the harness name) must match as they are. CI runs three policies (the oracle, a cheater, the staller)
on one dev task of each environment; `ARENA_NODE_FIDELITY_POLICIES=all` runs every policy. The lean
side of one environment boots a box per rollout, of the other claims its boxes from a warm pool
(`[env] pool = 2`): both ways a lean box is had, for each harness, at no extra run.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

from arena.policies import PolicyResolver
from arena.server import start_in_thread
from arena_testkit.lean_fidelity import RolloutPath, differences, run_policies
from arena_testkit.proc_watch import processes_matching

pytestmark = pytest.mark.docker

POLICIES = {
    "fault-localisation": ["oracle", "cheater_read_store", "staller"],
    "schema-migration": ["oracle", "cheater_read_heldout", "staller"],
}

PER_ROLLOUT = [
    (re.compile(r"(vf-codex-home-|\.vf-claude/)[0-9a-f]{32}"), r"\1<rollout>"),
    (re.compile(r"Wall time: \d+(?:\.\d+)? seconds"), "Wall time: <s> seconds"),
    (re.compile(r"Chunk ID: [0-9a-f]{6}\b"), "Chunk ID: <id>"),
]
"""Values drawn afresh per rollout on either path: the harness's home dir (verifiers' claude_code config
dir and codex CODEX_HOME), and codex's measured tool wall time and the random id it gives a command's
output."""
ADAPTERS = {"claude_code": b"/.bin/claude-agent-acp\x00", "codex": b"/.bin/codex-acp\x00"}
"""How each harness's node ACP adapter appears in a process's command line (`node <adapter>`)."""
IDS = re.compile(r"\b(toolu|call|fc|msg)_[0-9a-f]{24}\b")
"""Ids the scripted model server derives from the request (which names the harness's home)."""


def _canonical(messages: list[dict[str, Any]]) -> list[Any]:
    text = json.dumps(messages, sort_keys=True)
    for pattern, replacement in PER_ROLLOUT:
        text = pattern.sub(replacement, text)
    seen: dict[str, str] = {}
    text = IDS.sub(lambda m: seen.setdefault(m.group(0), f"{m.group(1)}_<{len(seen)}>"), text)
    return json.loads(text)  # type: ignore[no-any-return]


def test_the_canonical_form_names_only_per_rollout_values_alike():
    one = [
        {
            "role": "system",
            "content": "memory at .vf-claude/" + "a" * 32 + "/x; Chunk ID: 6bd27a\nWall time: 0.0137 seconds",
        },
        {"id": "toolu_" + "1" * 24, "tool_call_id": "toolu_" + "1" * 24},
        {"id": "toolu_" + "2" * 24},
    ]
    two = [
        {
            "role": "system",
            "content": "memory at .vf-claude/" + "b" * 32 + "/x; Chunk ID: 635bb8\nWall time: 2 seconds",
        },
        {"id": "toolu_" + "3" * 24, "tool_call_id": "toolu_" + "3" * 24},
        {"id": "toolu_" + "4" * 24},
    ]
    assert _canonical(one) == _canonical(two)
    # A different call graph (one id where there were two) or other text stays different.
    assert _canonical(one) != _canonical([*two[:2], {"id": "toolu_" + "3" * 24}])
    assert _canonical(one) != _canonical([{**two[0], "content": two[0]["content"].replace("memory", "memo")}, *two[1:]])


@pytest.mark.parametrize("harness", ["claude_code", "codex"])
@pytest.mark.parametrize(("env_id", "pool"), [("fault-localisation", 0), ("schema-migration", 2)])
def test_a_node_harness_rolls_out_in_a_lean_box_as_on_verifiers_docker_runtime(
    harness: str, env_id: str, pool: int
) -> None:
    every = os.environ.get("ARENA_NODE_FIDELITY_POLICIES") == "all"
    policies = [*PolicyResolver().environment_policies(env_id), "staller"] if every else POLICIES[env_id]
    with start_in_thread() as server:
        with processes_matching(ADAPTERS[harness]) as adapter_on_stock:
            reference = run_policies(env_id, RolloutPath(harness, "stock"), policies, server.url)
        with processes_matching(ADAPTERS[harness]) as adapter_on_lean:
            lean = run_policies(env_id, RolloutPath(harness, "lean", pool=pool), policies, server.url)

    assert (len(reference.lean_boxes), len(lean.lean_boxes)) == (0, len(policies))  # each side took its path
    assert lean.pooled > 0 if pool else lean.pooled == 0  # warm boxes claimed (a claim finding none boots its own)
    # The lean runner drove the agent itself; verifiers' ran the node adapter.
    assert adapter_on_stock and not [
        cgroups for _, cgroups in adapter_on_lean if any(box in cgroups for box in lean.lean_boxes)
    ]
    assert all(len(box) == 12 for box in lean.lean_boxes)  # ids a cgroup path names, not empty strings
    assert all(r.ok and not r.errors for r in reference.rollouts), [(r.policy, r.errors) for r in reference.rollouts]
    problems = {r.policy: differences(r, other, _canonical) for r, other in zip(reference.rollouts, lean.rollouts)}
    assert not {k: v for k, v in problems.items() if v}
    # Not vacuous: real tool calls, and the oracle scores apart from the staller.
    assert sum(len(r.tool_calls()) for r in lean.rollouts) > len(policies)
    rewards = {r.policy: r.reward for r in lean.rollouts}
    assert rewards["oracle"] == 1.0 and rewards["staller"] == 0.0
