"""A fitted gradient-boosted ensemble exported as JSON and scored in pure Python (no numpy or scikit-learn at run time).

The JSON is what an environment ships as package data, so a published shortcut policy runs the
trained model without the training stack. Thresholds compare as float32, as scikit-learn's trees do,
so the shipped model predicts what the fitted one did.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Model", "export", "load"]

FORMAT = 1


def _f32(x: float) -> float:
    """`x` as float32, as sklearn's trees compare it."""
    try:
        return float(struct.unpack("f", struct.pack("f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


@dataclass(frozen=True)
class Model:
    """A binary gradient-boosted ensemble of regression trees: raw = init + rate * sum(leaf values)."""

    meta: dict[str, Any]
    features: tuple[str, ...]
    init: float
    learning_rate: float
    threshold: float
    """Below this top probability the learner answers "none" (fit on train)."""
    trees: tuple[tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...]], ...]
    """Per tree: (feature, threshold, left child, right child, value) per node; feature -1 is a leaf."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        """Raises:
        ValueError: the JSON is of another format than this reader's."""
        if data.get("format") != FORMAT:
            raise ValueError(f"model format {data.get('format')!r}, this reader needs {FORMAT}")
        trees = tuple(
            (tuple(t["feature"]), tuple(t["threshold"]), tuple(t["left"]), tuple(t["right"]), tuple(t["value"]))
            for t in data["trees"]
        )
        return cls(
            data["meta"],
            tuple(data["features"]),
            float(data["init"]),
            float(data["learning_rate"]),
            float(data["threshold"]),
            trees,
        )

    def raw(self, row: dict[str, float]) -> float:
        x = [_f32(float(row[name])) for name in self.features]
        total = 0.0
        for feature, threshold, left, right, value in self.trees:
            node = 0
            while feature[node] >= 0:
                node = left[node] if x[feature[node]] <= threshold[node] else right[node]
            total += value[node]
        return self.init + self.learning_rate * total

    def probability(self, row: dict[str, float]) -> float:
        raw = self.raw(row)
        return 1.0 / (1.0 + math.exp(-raw)) if raw >= -700 else 0.0


def export(clf: Any, features: list[str], threshold: float, meta: dict[str, Any]) -> dict[str, Any]:
    """A fitted scikit-learn GradientBoostingClassifier (binary) as the JSON `Model` reads."""
    trees = []
    for estimator in clf.estimators_[:, 0]:
        t = estimator.tree_
        trees.append(
            {
                "feature": [int(f) if f >= 0 else -1 for f in t.feature],
                "threshold": [float(x) if f >= 0 else 0.0 for x, f in zip(t.threshold, t.feature)],
                "left": [int(c) for c in t.children_left],
                "right": [int(c) for c in t.children_right],
                "value": [float(v[0][0]) for v in t.value],
            }
        )
    # The ensemble's starting score: the raw prediction minus what the trees add.
    row = [[0.0] * clf.n_features_in_]
    init = float(clf.decision_function(row)[0]) - clf.learning_rate * sum(
        float(e.predict(row)[0]) for e in clf.estimators_[:, 0]
    )
    return {
        "format": FORMAT,
        "meta": meta,
        "features": features,
        "init": init,
        "learning_rate": float(clf.learning_rate),
        "threshold": threshold,
        "trees": trees,
    }


def load(path: Path) -> Model:
    return Model.from_json(json.loads(path.read_text()))
