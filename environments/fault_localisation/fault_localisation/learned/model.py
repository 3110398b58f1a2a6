"""A trained tree ensemble read from JSON and scored in pure Python (no numpy or sklearn at run time)."""

from __future__ import annotations

import functools
import json
import math
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Model", "load", "shipped", "weights_path"]

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
    """Below this top probability the policy answers "none" (fit on train)."""
    trees: tuple[tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...]], ...]
    """Per tree: (feature, threshold, left child, right child, value) per node; feature -1 is a leaf."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        if data.get("format") != FORMAT:
            raise ValueError(f"model format {data.get('format')!r}, this reader needs {FORMAT}")
        trees = tuple((tuple(t["feature"]), tuple(t["threshold"]), tuple(t["left"]), tuple(t["right"]),
                       tuple(t["value"])) for t in data["trees"])
        return cls(data["meta"], tuple(data["features"]), float(data["init"]), float(data["learning_rate"]),
                   float(data["threshold"]), trees)

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


def weights_path(variant: str) -> Path:
    """Where the shipped model of `variant` lives in the source tree (the training script writes it)."""
    return Path(__file__).parent / "weights" / f"{variant}.json"


def load(path: Path) -> Model:
    return Model.from_json(json.loads(path.read_text()))


@functools.cache
def shipped(variant: str) -> Model:
    """The model of `variant` shipped as package data."""
    text = resources.files("fault_localisation.learned").joinpath("weights", f"{variant}.json").read_text()
    return Model.from_json(json.loads(text))
