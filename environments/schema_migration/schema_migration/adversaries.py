"""schema-migration's offline adversaries: the classic wrong migrations and the mutation sweep, played against the real grader.

Both grade SQL in process on each task's held-out rows (`grade.grade`, keyed by this host's task
secret), as a rollout's reward does, without a box: a wrong migration is graded as submitted after
the oracle's rehearsal (2 statements, no efficiency cost), so its reward is the grade.

- `wrong_migrations` submits each of the six classic mistakes (`mistakes.MISTAKES`, the
  `shortcut_*` policies' SQL) and keeps the best per task: the most an agent that misses one rule
  earns, with six tries. Claim: at most a shortcut's ceiling (`SHORTCUT_CEILING`); every one is
  capped at `score.MISS_CAP` below it.
- `mutation_survivors` is the mutation sweep (`mutants`): every one-edit mutant of the task's
  reference migration; the task scores 1 when a mutant not argued equivalent survives (scores above
  `KILL_AT`). Claim: at most `SURVIVOR_CEILING` of tasks have one. The sweep's own command
  (`python -m schema_migration.mutants`) stays the strict adequacy gate: one survivor fails it.
"""

from __future__ import annotations

from arena_kit.adversaries.mutation.sweep import KILL_AT
from arena_kit.contract import AdversaryRun, Split
from arena_kit.scripted import SHORTCUT_CEILING

from schema_migration.generate import seeds, spec
from schema_migration.grade import grade
from schema_migration.mistakes import MISTAKES, wrong_migration
from schema_migration.mutants.equivalent import is_equivalent
from schema_migration.mutants.sweep import sweep

__all__ = ["SURVIVOR_CEILING", "SWEEP_JOBS", "mutation_survivors", "wrong_migrations"]

SURVIVOR_CEILING = 0.10
"""The highest share of tasks with a surviving non-equivalent mutant the claim allows (30 tasks
without one decide it: Clopper–Pearson's upper bound is 0.095)."""
SWEEP_JOBS = 2
"""Tasks swept at once (the sweep command's default)."""


def wrong_migrations(split: Split, tasks: int) -> AdversaryRun:
    """The best of the six classic wrong migrations on each of the first `tasks` tasks of `split`."""
    rewards = {}
    for seed in seeds(split, tasks):
        s = spec(seed)
        rewards[f"{split}-{seed}"] = [max(grade(wrong_migration(m, s.family, s.params), s).score for m in MISTAKES)]
    return AdversaryRun(
        claim=f"the best of the {len(MISTAKES)} classic wrong migrations per task scores at most {SHORTCUT_CEILING} "
        "(a shortcut's ceiling)",
        ceiling=SHORTCUT_CEILING,
        rewards=rewards,
    )


def mutation_survivors(split: Split, tasks: int) -> AdversaryRun:
    """The mutation sweep of the first `tasks` tasks of `split`: 1 for a task with a non-equivalent survivor, else 0.

    Raises:
        mutants.sweep.RoundTripError: sqlglot's rendering of a task's reference does not grade 1.0.
    """
    task_seeds = seeds(split, tasks)
    rewards = {}
    for seed, outcomes in zip(task_seeds, sweep(task_seeds, SWEEP_JOBS), strict=True):
        survived = any(o.ran and not o.killed and not is_equivalent(o) for o in outcomes)
        rewards[f"{split}-{seed}"] = [1.0 if survived else 0.0]
    return AdversaryRun(
        claim=f"a one-edit mutant of the reference migration that is not argued equivalent scores above {KILL_AT} "
        f"on at most {SURVIVOR_CEILING:.0%} of tasks",
        ceiling=SURVIVOR_CEILING,
        rewards=rewards,
    )
