"""Each task as a learner's plan saw it: the environment's hooks (`Ground`), a learner (`Learner`), and `observe`.

A learner is three choices an environment makes: a fixed query plan over cheap signals (never the
answer's own evidence), the per-candidate features of what the plan saw, and an estimator. The
environment's side is its `Ground`: its tasks per split, what a task's prompt tells a plan, its tools
answered offline through the toolset's own query code, the label, and the real grader's reward for
naming a candidate. Nothing here knows what a candidate is (a service, a sensor).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from arena_kit.adversaries.learned.offline import Executor, Plan, drive
from arena_kit.contract.adversary import Split

__all__ = ["NONE", "Case", "Ground", "Learner", "Rows", "observe"]

T = TypeVar("T")
C = TypeVar("C")
S = TypeVar("S")
NONE = "none"
"""The choice of a learner that abstains (and the label of a task with nothing to find)."""
Rows = dict[str, dict[str, float]]
"""Candidate → feature name → value."""


@dataclass(frozen=True)
class Case(Generic[T, C]):
    """One task as a learner's plan saw it."""

    task: T
    ctx: C
    rows: Rows | None
    """Each candidate's features; None when the plan saw nothing to rank (the learner answers NONE)."""
    charged: int
    """Queries the plan spent."""
    root: str
    """The label: the right candidate, or NONE."""


def _keep(task: Any, answer: Executor) -> None:
    return None


@dataclass(frozen=True)
class Ground(Generic[T, C]):
    """The environment's hooks: where its tasks, tools, labels and grader come from."""

    tasks: Callable[[Split, int], Sequence[T]]
    """The first n tasks of a split (train ones are what a learner fits on)."""
    task_id: Callable[[T], str]
    context: Callable[[T], C]
    """What the task's prompt tells a plan."""
    executor: Callable[[T], Executor]
    """The task's tools offline, through the toolset's own query code."""
    root: Callable[[T], str]
    reward: Callable[[Case[T, C], str], float]
    """The real grader's score for naming this candidate (NONE included) after this case's plan."""
    release: Callable[[T, Executor], None] = _keep
    """Drop what the executor built for the task (`observe(..., prune=True)`: stores can be large)."""


@dataclass(frozen=True)
class Learner(Generic[C, S]):
    name: str
    plan: Callable[[C], Plan[S]]
    features: Callable[[C, S], Rows | None]
    make: Callable[[int], Any]
    """A fresh estimator (scikit-learn's fit/predict_proba) for a seed (`estimators`)."""


def observe(
    learners: Sequence[Learner[C, Any]], tasks: Sequence[T], ground: Ground[T, C], prune: bool = False
) -> dict[str, list[Case[T, C]]]:
    """Each task as every learner's plan saw it, by learner name; with `prune`, each task's executor
    is released once every plan has run."""
    cases: dict[str, list[Case[T, C]]] = {learner.name: [] for learner in learners}
    for task in tasks:
        ctx = ground.context(task)
        answer = ground.executor(task)
        root = ground.root(task)
        for learner in learners:
            answer.charged = 0
            seen = drive(learner.plan(ctx), answer)
            cases[learner.name].append(Case(task, ctx, learner.features(ctx, seen), answer.charged, root))
        if prune:
            ground.release(task, answer)
    return cases
