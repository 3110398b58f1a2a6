"""Cases to a training matrix: one row per candidate of each task, labelled by whether it is the root, grouped by task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arena_kit.adversaries.learned.observe import Case

__all__ = ["Matrix", "feature_keys", "matrix"]


@dataclass(frozen=True)
class Matrix:
    keys: list[str]
    """The feature order of every row."""
    X: list[list[float]]
    y: list[int]
    group: list[int]
    """Each row's case index (rows of one task never land in two folds)."""
    candidate: list[str]


def feature_keys(cases: Sequence[Case[Any, Any]]) -> list[str]:
    """The sorted feature names of the first candidate of the first case that has one.

    Raises:
        ValueError: no case has a candidate.
    """
    for case in cases:
        if case.rows:
            return sorted(next(iter(case.rows.values())))
    raise ValueError(f"none of the {len(cases)} cases has a candidate to learn from")


def matrix(cases: Sequence[Case[Any, Any]], keys: list[str] | None = None) -> Matrix:
    """Every candidate of every case the plan did not call quiet, in candidate order within a case."""
    keys = feature_keys(cases) if keys is None else keys
    X: list[list[float]] = []
    y: list[int] = []
    group: list[int] = []
    candidate: list[str] = []
    for i, case in enumerate(cases):
        if case.rows is None:
            continue
        for name, row in sorted(case.rows.items()):
            X.append([row[k] for k in keys])
            y.append(int(name == case.root))
            group.append(i)
            candidate.append(name)
    return Matrix(keys, X, y, group, candidate)
