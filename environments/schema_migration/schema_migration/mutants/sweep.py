"""Grades every mutant of each task's reference migration on that task's held-out rows, in process (no Docker)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from schema_migration import heldout
from schema_migration.families import FAMILIES
from schema_migration.generate import Split, seeds, spec
from schema_migration.grade import grade
from schema_migration.mutants.build import mutants, roundtrip

__all__ = ["KILL_AT", "Outcome", "RoundTripError", "family_seeds", "sweep", "sweep_task"]

KILL_AT = 0.5
"""A mutant is killed when it scores at most this (the issue's bar: a wrong migration scores <= 0.5)."""


class RoundTripError(RuntimeError):
    """sqlglot's rendering of a reference migration does not grade 1.0."""


@dataclass(frozen=True)
class Outcome:
    family: str
    seed: int
    operator: str
    key: str
    score: float
    stage: str
    """The grader's stage: "checked" if the mutant ran; "error", "integrity", ... if it did not get that far."""
    sql: str

    @property
    def ran(self) -> bool:
        return self.stage == "checked"

    @property
    def killed(self) -> bool:
        return self.score <= KILL_AT


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
        raise RoundTripError(f"seed {seed} ({s.family}): sqlglot's rendering of the reference scores {check.score}: {check.reason}")
    out = []
    for m in mutants(s):
        g = grade(m.sql, s, rows)
        out.append(Outcome(s.family, seed, m.operator, m.key, g.score, g.stage, m.sql))
    return out


def sweep(task_seeds: Iterable[int], jobs: int = 1) -> Iterator[list[Outcome]]:
    """Each task's outcomes, in the order of `task_seeds` (tasks graded `jobs` at a time)."""
    task_seeds = list(task_seeds)
    if jobs <= 1:
        yield from map(sweep_task, task_seeds)
        return
    with ProcessPoolExecutor(jobs) as pool:
        yield from pool.map(sweep_task, task_seeds)
