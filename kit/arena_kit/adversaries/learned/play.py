"""The fitted learner played on a split: its choice per task, scored by the environment's real grader, as an `AdversaryRun`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from arena_kit.adversaries.learned.observe import NONE, Case, Ground, Rows
from arena_kit.adversaries.learned.train import Fitted
from arena_kit.contract.adversary import AdversaryRun

__all__ = ["choose", "play"]

T = TypeVar("T")
C = TypeVar("C")


def choose(fitted: Fitted, rows: Rows | None) -> tuple[str, float]:
    """The candidate the model ranks first and its probability (ties to the first name), or NONE below
    the fitted threshold or when the plan saw nothing to rank."""
    if not rows:
        return NONE, 0.0
    names = sorted(rows)
    probs = fitted.model.predict_proba([[rows[n][k] for k in fitted.keys] for n in names])[:, 1]
    ranked = sorted(zip((float(p) for p in probs), names), key=lambda pn: (-pn[0], pn[1]))
    if ranked[0][0] < fitted.threshold:
        return NONE, ranked[0][0]
    return ranked[0][1], ranked[0][0]


def play(fitted: Fitted, cases: Sequence[Case[T, C]], ground: Ground[T, C], claim: str, ceiling: float) -> AdversaryRun:
    """Each case's choice rewarded by `ground.reward`, by task id; `verdict()` decides `claim` by the
    gate's upper one-sided bound against `ceiling`."""
    rewards: dict[str, list[float]] = {}
    for case in cases:
        rewards[ground.task_id(case.task)] = [ground.reward(case, choose(fitted, case.rows)[0])]
    return AdversaryRun(claim=claim, ceiling=ceiling, rewards=rewards)
