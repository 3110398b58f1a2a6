"""The estimators a learned adversary fits: scikit-learn's (imported on first use; an environment declares it as an extra) and a pure-Python table.

The three scikit-learn settings are the ones fault-localisation's adversaries were tuned with; each
takes the run's seed as `random_state`, so a fit repeats exactly. `PositiveRate` needs nothing past
the kit: it learns the label rate of each distinct feature row, the strongest learner over a few
discrete signals (a position, a bucket), and what a new environment starts from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["BOOSTING", "PositiveRate", "gradient_boosting", "logistic", "positive_rate", "random_forest"]

BOOSTING: dict[str, Any] = {
    "n_estimators": 150,
    "max_depth": 3,
    "learning_rate": 0.1,
    "subsample": 0.8,
    "min_samples_leaf": 5,
}
"""scikit-learn GradientBoostingClassifier settings (random_state is the run's seed)."""


def gradient_boosting(seed: int) -> Any:
    """Gradient-boosted trees (`BOOSTING`); `weights.export` writes one as JSON."""
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(random_state=seed, **BOOSTING)


def random_forest(seed: int) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=300, min_samples_leaf=2, random_state=seed, n_jobs=1)


def logistic(seed: int) -> Any:
    """A logistic regression over standardised features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000, random_state=seed))


class PositiveRate:
    """The label rate of each distinct feature row, smoothed toward the overall rate by one row; a row
    never seen in training scores the overall rate."""

    def __init__(self) -> None:
        self.rate = 0.0
        self.table: dict[tuple[float, ...], tuple[int, int]] = {}

    def fit(self, X: Sequence[Sequence[float]], y: Sequence[int]) -> PositiveRate:
        table: dict[tuple[float, ...], tuple[int, int]] = {}
        for row, label in zip(X, y):
            n, positive = table.get(tuple(row), (0, 0))
            table[tuple(row)] = (n + 1, positive + int(label))
        self.table, self.rate = table, sum(y) / max(1, len(y))
        return self

    def predict_proba(self, X: Sequence[Sequence[float]]) -> NDArray[np.float64]:
        p = [(positive + self.rate) / (n + 1) for n, positive in (self.table.get(tuple(row), (0, 0)) for row in X)]
        return np.column_stack([1.0 - np.array(p, dtype=float), np.array(p, dtype=float)]).reshape(len(p), 2)


def positive_rate(seed: int) -> PositiveRate:
    """A `PositiveRate` table (deterministic: the seed changes nothing)."""
    return PositiveRate()
