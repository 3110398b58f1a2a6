"""Fidelity, proven: every scripted policy of both environments gives the same rollout under the lean
harness (`arena-bash`) as under verifiers' own `bash` harness, on verifiers' docker runtime.

Same task, same seed, same scripted model server: the whole message graph must match (every tool
call with its id and arguments, every tool result as the model saw it, the final reply), and so
must the rewards, metrics, stop condition, errors, info and the rewrite audits (less their ids,
clocks and the harness name). CI runs every policy on one dev task per environment;
`ARENA_LEAN_FIDELITY_TASKS=5` widens the sweep.
"""

from __future__ import annotations

import os

import pytest

from arena.policies import PolicyResolver
from arena.server import start_in_thread
from lean_fidelity import Rollout, run_policies

pytestmark = pytest.mark.docker

TASKS = int(os.environ.get("ARENA_LEAN_FIDELITY_TASKS", "1"))
FIELDS = ("messages", "parents", "rewards", "metrics", "stop", "ok", "errors", "info", "audits", "request_rewrites")


def _differences(ref: Rollout, lean: Rollout) -> list[str]:
    out = []
    for name in FIELDS:
        want, got = getattr(ref, name), getattr(lean, name)
        if want == got:
            continue
        if name == "messages":
            index = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            out.append(f"messages differ from #{index}: bash={str(want[index:index + 1])[:400]} lean={str(got[index:index + 1])[:400]}")
        else:
            out.append(f"{name}: bash={str(want)[:300]} lean={str(got)[:300]}")
    return out


@pytest.mark.parametrize("env_id", ["fault-localisation", "schema-migration"])
def test_every_policy_rolls_out_identically_under_the_lean_and_the_bash_harness(env_id: str) -> None:
    policies = [*PolicyResolver().environment_policies(env_id), "staller"]
    with start_in_thread() as server:
        reference = run_policies(env_id, "bash", policies, server.url, tasks=TASKS)
        lean = run_policies(env_id, "arena-bash", policies, server.url, tasks=TASKS)

    assert [(r.policy, r.task) for r in lean] == [(r.policy, r.task) for r in reference]
    assert all(r.ok and not r.errors for r in reference), [(r.policy, r.errors) for r in reference if r.errors]
    problems = {f"{r.policy} on {r.task}": _differences(r, l) for r, l in zip(reference, lean)}
    assert not {k: v for k, v in problems.items() if v}
    # The comparison is not vacuous: the sweep ran real tools, scored apart, and audited cheaters.
    assert sum(len(r.tool_calls()) for r in lean) > len(policies) * TASKS
    assert len({round(r.reward, 3) for r in lean}) > 1
    assert any(r.audits for r in lean) or env_id == "schema-migration"
