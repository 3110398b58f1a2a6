"""Retired: the clustered t interval Arena printed before `arena_kit.gate.stats`, kept only while
`arena/view/load.py` still imports it (its owner is switching it to `arena_kit.gate.stats`); delete
this module and tests/arena/test_stats.py with that change. Nothing else may import it.

Why it was retired (issue 41): its interval has zero width when every episode agrees (3 of 3
printed 1.000 ± 0.000), leaves [0, 1] (2 of 3 printed [-0.768, 2.101]), and covers far below 95 %
at the sizes and extremes Arena runs (a true rate of 0.98 over 50 tasks: about 64 %).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["LEVEL", "METHOD", "Interval", "PairedDifference", "by_task", "clustered_mean", "inverse_t", "paired_difference", "t_quantile"]

LEVEL = 0.95
METHOD = "task-clustered SE (CR1, G/(G-1)), t with G-1 df"
PAIRED_METHOD = "paired per-task difference, t with T-1 df"


def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided critical value of Student's t with `df` degrees of freedom (df ≥ 1)."""
    return inverse_t(df, 0.5 + level / 2)


def inverse_t(df: int, p: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (scipy's `stdtrit`: the same
    function `scipy.stats.t.ppf` calls, without importing all of scipy.stats)."""
    from scipy.special import stdtrit  # imported when an interval is computed, not with the CLI

    return float(stdtrit(df, p))


@dataclass(frozen=True)
class Interval:
    """A mean, its standard error and its 95 % interval over `n` episodes in `tasks` clusters.

    `se` (and so `low`, `high`) is NaN when there are fewer than two tasks: one task says
    nothing about the next."""

    mean: float
    se: float
    low: float
    high: float
    n: int
    tasks: int
    method: str = METHOD

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def text(self, digits: int = 3) -> str:
        """`0.667 ± 0.287`, or `0.667 ± ?` when the interval is undefined."""
        if math.isnan(self.mean):
            return "—"
        spread = "?" if math.isnan(self.half_width) else f"{self.half_width:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {spread}"


def clustered_mean(values: Sequence[float], clusters: Sequence[str] | None = None, level: float = LEVEL) -> Interval:
    """The mean of `values` with its interval clustered by `clusters` (one label per value; None:
    every value its own cluster).

    Raises:
        ValueError: `clusters` is not as long as `values`.
    """
    labels = list(clusters) if clusters is not None else [str(i) for i in range(len(values))]
    if len(labels) != len(values):
        raise ValueError(f"{len(values)} values but {len(labels)} cluster labels")
    n = len(values)
    if n == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, nan, 0, 0)
    mean = math.fsum(values) / n
    residuals: dict[str, float] = defaultdict(float)
    for value, label in zip(values, labels):
        residuals[label] += value - mean
    g = len(residuals)
    if g < 2:
        nan = float("nan")
        return Interval(mean, nan, nan, nan, n, g)
    se = math.sqrt(g / (g - 1) * math.fsum(r * r for r in residuals.values())) / n
    half = t_quantile(g - 1, level) * se
    return Interval(mean, se, mean - half, mean + half, n, g)


def by_task(pairs: Iterable[tuple[str, float]]) -> dict[str, list[float]]:
    """(task, reward) pairs grouped by task, in first-seen order."""
    grouped: dict[str, list[float]] = {}
    for task, value in pairs:
        grouped.setdefault(task, []).append(value)
    return grouped


@dataclass(frozen=True)
class PairedDifference:
    """B − A on the tasks both runs have: the mean per-task difference and its interval."""

    interval: Interval
    """Of the per-task differences (n = tasks = the shared tasks)."""
    mean_a: float
    mean_b: float
    """Each run's mean over the shared tasks (a task's episodes averaged first)."""
    differing: list[tuple[str, float, float]] = field(default_factory=list)
    """(task, A's mean, B's mean) of every shared task whose outcome differs."""
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)


def paired_difference(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], level: float = LEVEL,
                      tolerance: float = 1e-9) -> PairedDifference:
    """Compare two runs given as task → rewards (several rollouts of a task are averaged first)."""
    shared = [task for task in a if task in b and a[task] and b[task]]
    mean_a = {task: math.fsum(a[task]) / len(a[task]) for task in shared}
    mean_b = {task: math.fsum(b[task]) / len(b[task]) for task in shared}
    diffs = [mean_b[task] - mean_a[task] for task in shared]
    interval = clustered_mean(diffs, shared, level)
    interval = Interval(interval.mean, interval.se, interval.low, interval.high, interval.n, interval.tasks, PAIRED_METHOD)
    nan = float("nan")
    return PairedDifference(
        interval=interval,
        mean_a=math.fsum(mean_a.values()) / len(shared) if shared else nan,
        mean_b=math.fsum(mean_b.values()) / len(shared) if shared else nan,
        differing=[(task, mean_a[task], mean_b[task]) for task in shared if abs(mean_b[task] - mean_a[task]) > tolerance],
        only_a=[task for task in a if task not in b],
        only_b=[task for task in b if task not in a],
    )
