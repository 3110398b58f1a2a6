"""The sweep's runner: each task's mutants graded against its held-out data, tasks in parallel processes, outcomes in task order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from arena_kit.adversaries.mutation.operators import Mutant

__all__ = ["KILL_AT", "Outcome", "graded", "run"]

KILL_AT = 0.5
"""A mutant is killed when it scores at most this (a wrong answer must score <= 0.5)."""
T = TypeVar("T")


@dataclass(frozen=True)
class Outcome:
    family: str
    seed: int
    operator: str
    key: str
    score: float
    stage: str
    """The grader's stage: "checked" if the mutant ran; "error", "integrity", ... if it did not get that far."""
    answer: str

    @property
    def ran(self) -> bool:
        return self.stage == "checked"

    @property
    def killed(self) -> bool:
        return self.score <= KILL_AT


def graded(seed: int, mutants: Iterable[Mutant], grade: Callable[[str], tuple[float, str]]) -> list[Outcome]:
    """Each mutant of task `seed` graded (`grade(answer) -> (score, stage)`), in mutant order."""
    out = []
    for m in mutants:
        score, stage = grade(m.answer)
        out.append(Outcome(m.family, seed, m.operator, m.key, score, stage, m.answer))
    return out


def run(sweep_task: Callable[[int], list[T]], seeds: Iterable[int], jobs: int = 1) -> Iterator[list[T]]:
    """`sweep_task` of each seed, in seed order, `jobs` tasks at a time in worker processes
    (`sweep_task` must be a module-level function: it is pickled by name)."""
    seeds = list(seeds)
    if jobs <= 1:
        yield from map(sweep_task, seeds)
        return
    with ProcessPoolExecutor(jobs) as pool:
        yield from pool.map(sweep_task, seeds)
