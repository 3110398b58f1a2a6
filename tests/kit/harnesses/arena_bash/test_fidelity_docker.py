"""Fidelity, proven: every scripted policy of every installed environment gives the same rollout on the lean path
(the `arena-bash` harness in a lean box, the environments' default) as on the reference path (verifiers'
own `bash` harness on verifiers' own docker runtime, `[env] docker = "stock"`).

Same task, same seed, same scripted model server: the whole message graph must match (every tool
call with its id and arguments, every tool result as the model saw it, the final reply), and so
must the rewards, metrics, stop condition, errors, info and the rewrite audits (less their ids,
clocks and the harness name). The lean path runs twice: each box booted for its rollout, and each
claimed from a warm pool (`[env] pool = 2`), whose boxes hold the runner prestarted. The environments come
from their entry points (`arena.installed`), never a list. CI runs every policy on one dev task per environment;
`ARENA_LEAN_FIDELITY_TASKS=5` widens the sweep.
"""

from __future__ import annotations

import os

import pytest

from arena.installed import environment_ids
from arena.policies import PolicyResolver
from arena.server import start_in_thread
from arena_testkit.lean_fidelity import LEAN, POOLED, REFERENCE, differences, run_policies

pytestmark = pytest.mark.docker

TASKS = int(os.environ.get("ARENA_LEAN_FIDELITY_TASKS", "1"))


@pytest.mark.parametrize("env_id", environment_ids())
def test_every_policy_rolls_out_on_the_lean_path_as_on_verifiers_bash_harness_and_docker_runtime(env_id: str) -> None:
    policies = [*PolicyResolver().environment_policies(env_id), "staller"]
    with start_in_thread() as server:
        reference = run_policies(env_id, REFERENCE, policies, server.url, tasks=TASKS)
        lean = run_policies(env_id, LEAN, policies, server.url, tasks=TASKS)
        pooled = run_policies(env_id, POOLED, policies, server.url, tasks=TASKS)

    # Each side really took its path: a lean box per lean rollout, none for the reference, and on the
    # pooled path boxes claimed warm (a claim that finds none ready boots its own, so not every one).
    assert (len(reference.lean_boxes), len(lean.lean_boxes), lean.pooled) == (0, len(policies) * TASKS, 0)
    assert len(pooled.lean_boxes) == len(policies) * TASKS and pooled.pooled > 0
    # A warm box holds the runner prestarted, and the rollout ran it there (no exec).
    assert pooled.prestarted == pooled.pooled and lean.prestarted == 0
    ref_rollouts, lean_rollouts = reference.rollouts, lean.rollouts
    assert [(r.policy, r.task) for r in lean_rollouts] == [(r.policy, r.task) for r in ref_rollouts]
    assert all(r.ok and not r.errors for r in ref_rollouts), [(r.policy, r.errors) for r in ref_rollouts if r.errors]
    problems = {
        f"{side} {r.policy} on {r.task}": differences(r, other)
        for side, sweep in (("lean", lean), ("pooled", pooled))
        for r, other in zip(ref_rollouts, sweep.rollouts)
    }
    assert not {k: v for k, v in problems.items() if v}
    # The comparison is not vacuous: the sweep ran real tools, scored apart, and audited cheaters.
    assert sum(len(r.tool_calls()) for r in lean_rollouts) > len(policies) * TASKS
    assert len({round(r.reward, 3) for r in lean_rollouts}) > 1
    assert any(r.audits for r in lean_rollouts) or env_id == "schema-migration"
