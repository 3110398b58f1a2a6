"""Grades every mutant of each task's reference migration on that task's held-out rows, in process (no Docker), through the kit's runner."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from arena_kit.adversaries.mutation.adequacy import adversary_run
from arena_kit.adversaries.mutation.sweep import Outcome, graded, run
from arena_kit.contract.adversary import AdversaryRun, Split
from schema_migration import heldout
from schema_migration.families import FAMILIES
from schema_migration.generate import seeds, spec
from schema_migration.grade import grade
from schema_migration.mutants.build import mutants, roundtrip
from schema_migration.mutants.equivalent import is_equivalent

__all__ = [
    "SURVIVOR_CEILING",
    "RoundTripError",
    "family_seeds",
    "mutation_sweep",
    "sweep",
    "sweep_task",
]

SURVIVOR_CEILING = 0.10
"""The share of tasks on which some non-equivalent mutant may survive (`mutation_sweep`'s claim, by the upper bound)."""


class RoundTripError(RuntimeError):
    """sqlglot's rendering of a reference migration does not grade 1.0."""


def family_seeds(split: Split, per_family: int, families: Iterable[str] | None = None) -> list[int]:
    """The first `per_family` seeds of `split` for each family (all families unless named)."""
    wanted = set(families) if families is not None else {f.name for f in FAMILIES}
    pool = seeds(split, per_family * len(FAMILIES))
    return [seed for seed in pool if spec(seed).family in wanted]


def sweep_task(seed: int) -> list[Outcome]:
    """Every mutant of task `seed`, graded on its held-out rows.

    A task's sweep first grades the sqlglot round trip of the reference: if that does not score 1.0
    the renderer changed the migration's meaning and the task's mutants would measure nothing, so the
    sweep raises instead of reporting them.
    """
    s = spec(seed)
    rows = heldout.rows(s)
    check = grade(roundtrip(s), s, rows)
    if check.score != 1.0:
        raise RoundTripError(
            f"seed {seed} ({s.family}): sqlglot's rendering of the reference scores {check.score}: {check.reason}"
        )

    def graded_sql(sql: str) -> tuple[float, str]:
        g = grade(sql, s, rows)
        return g.score, g.stage

    return graded(seed, mutants(s), graded_sql)


def sweep(task_seeds: Iterable[int], jobs: int = 1) -> Iterator[list[Outcome]]:
    """Each task's outcomes, in the order of `task_seeds` (tasks graded `jobs` at a time)."""
    return run(sweep_task, task_seeds, jobs)


def mutation_sweep(split: Split, tasks: int) -> AdversaryRun:
    """The sweep as an adversary: every mutant of the first `tasks` tasks of `split`, two at a time;
    claims that a non-equivalent mutant survives on at most `SURVIVOR_CEILING` of tasks."""
    task_seeds = list(seeds(split, tasks))
    by_task = {f"{split}-{seed}": outcomes for seed, outcomes in zip(task_seeds, sweep(task_seeds, jobs=2))}
    claim = f"a one-edit mutant of the reference migration survives the held-out rows on at most {SURVIVOR_CEILING} of tasks"
    return adversary_run(by_task, is_equivalent, claim, SURVIVOR_CEILING)
