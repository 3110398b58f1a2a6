"""Fits a learner on train cases: the estimator on every candidate row, and its "none" threshold fit out of fold, grouped by task."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena_kit.adversaries.learned.dataset import Matrix, matrix
from arena_kit.adversaries.learned.observe import NONE, Case

__all__ = ["FOLDS", "Fitted", "fit", "none_threshold", "out_of_fold", "top"]

FOLDS = 3
"""Cross-validation folds (grouped by task) whose out-of-fold scores fit the "none" threshold."""


@dataclass(frozen=True)
class Fitted:
    model: Any
    """The estimator fit on every row (`predict_proba`)."""
    keys: list[str]
    """The feature order the model reads."""
    threshold: float = 0.0
    """Below this top probability the learner answers NONE."""
    cv: dict[str, float] = field(default_factory=dict)
    """Out-of-fold top-1 rates (with and without the threshold's NONE), when a threshold was fit."""


def top(probs: Sequence[float], group: Sequence[int], candidate: Sequence[str]) -> dict[int, tuple[float, str]]:
    """Each case's highest-scoring candidate and its score (ties to the first name)."""
    best: dict[int, tuple[float, str]] = {}
    for p, g, s in zip(probs, group, candidate):
        if g not in best or (-p, s) < (-best[g][0], best[g][1]):
            best[g] = (p, s)
    return best


def out_of_fold(make: Callable[[int], Any], m: Matrix, seed: int, folds: int = FOLDS) -> list[float]:
    """Each row's probability from a model that never saw its task (fold k fits with seed + k + 1)."""
    from sklearn.model_selection import GroupKFold

    probs = [0.0] * len(m.y)
    for fold, (rows, held) in enumerate(GroupKFold(folds).split(m.X, m.y, m.group)):
        clf = make(seed + fold + 1).fit([m.X[i] for i in rows], [m.y[i] for i in rows])
        for i, p in zip(held, clf.predict_proba([m.X[i] for i in held])[:, 1]):
            probs[i] = float(p)
    return probs


def none_threshold(
    cases: Sequence[Case[Any, Any]], best: dict[int, tuple[float, str]], midpoint: bool = False
) -> tuple[float, dict[str, float]]:
    """The top-probability threshold below which answering NONE pays best on these scores: a right
    candidate counts 1, a task with nothing to find answered NONE 1 (a quiet one too). With `midpoint`,
    halfway down to the next lower score, so a borderline case is not decided by rounding."""
    quiet = sum(1 for c in cases if c.rows is None and c.root == NONE)
    scored = [(p, s == cases[g].root, cases[g].root == NONE) for g, (p, s) in best.items()]
    best_t, most = 0.0, -1.0
    for t in sorted({0.0, *(p for p, _, _ in scored)}):
        score = quiet + sum(right if p >= t else control for p, right, control in scored)
        if score > most:
            best_t, most = t, score
    threshold = best_t
    if midpoint:
        lower = [p for p, _, _ in scored if p < best_t]
        threshold = (best_t + max(lower)) / 2 if lower and best_t > 0 else best_t
    return threshold, {
        "oof_top1_with_none": most / max(1, len(cases)),
        "oof_top1": sum(right for _, right, _ in scored) / max(1, len(cases)),
    }


def fit(
    make: Callable[[int], Any],
    cases: Sequence[Case[Any, Any]],
    seed: int,
    keys: list[str] | None = None,
    abstain: bool = True,
    midpoint: bool = False,
    folds: int = FOLDS,
) -> Fitted:
    """`make(seed)` fit on every candidate of `cases`; with `abstain`, first the NONE threshold, fit
    on out-of-fold scores (needs scikit-learn); without, the learner always names its top candidate."""
    m = matrix(cases, keys)
    threshold, cv = 0.0, dict[str, float]()
    if abstain:
        threshold, cv = none_threshold(cases, top(out_of_fold(make, m, seed, folds), m.group, m.candidate), midpoint)
    return Fitted(make(seed).fit(m.X, m.y), m.keys, threshold, cv)
