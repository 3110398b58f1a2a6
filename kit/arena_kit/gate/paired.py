"""Two runs on the same tasks: B − A, an exact paired test of "no difference", the interval that
agrees with it, and one-sided bounds a gate rule or a CI check can be decided on.

The test. Per shared task, d = B's mean over its rollouts − A's. If the runs do not differ, each d
is as likely to have come out with the opposite sign, so the test compares |Σd| with the sums of
every sign flip: all 2^n of them up to `EXACT_FLIPS` tasks (exact), `MONTE_CARLO_FLIPS` seeded
draws up to `NORMAL_TASKS` (p counts the observed sum, so it is never 0), the normal law of the same
sum beyond. With 0/1 rewards and one rollout it is the exact McNemar (sign) test: 3 tasks all lost
give p = 0.25.

The interval. A sign-flip test inverted over shifts has no width when every d is the same (six
tasks all lost give [−1, −1]) and misses the mean of a skewed difference, so the interval is the
betting interval of the mean of d (`bounds.betting_lower` on (d + 1) / 2), valid for any
distribution on [−1, 1], made to agree with p: it includes 0 when p > 1 − level, and when p ≤ 1 −
level its part beyond 0 on the far side from the mean is left out (that end is open at 0: the
test says the runs differ, and the interval how far they can). `lower`/`upper` are the one-sided
betting bounds, uncut: what a rule such as "exhaustive − oracle ≤ −0.15" is decided on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from arena_kit.gate.bounds import LEVEL, betting_lower, betting_order, check_level, task_means

__all__ = ["EXACT_FLIPS", "PairedTest", "holm", "paired_test", "sign_flip_p_values"]

EXACT_FLIPS = 16
"""Up to this many shared tasks the test enumerates every sign flip (2^16 = 65,536)."""
NORMAL_TASKS = 400
"""Past this many shared tasks the test uses the normal law of its sign-flip sum."""
MONTE_CARLO_FLIPS = 10_000
"""Sign flips drawn (seeded) between `EXACT_FLIPS` and `NORMAL_TASKS` shared tasks."""
TIE = 1e-9
"""Task means closer than this are a tie (d = 0)."""
INTERVAL_METHOD = "betting interval of the mean difference (Waudby-Smith & Ramdas), cut at 0 by the test"


@dataclass(frozen=True)
class PairedTest:
    """B − A on the tasks both runs scored: the paired test, its interval and one-sided bounds."""

    difference: float
    """The mean over shared tasks of (B's task mean − A's task mean)."""
    low: float
    high: float
    """The two-sided interval at `level`, in [−1, 1], agreeing with `p_value` (see the module)."""
    p_value: float
    """Two-sided, of "no difference" (the sign-flip test)."""
    mean_a: float
    mean_b: float
    """Each run's mean over the shared tasks only."""
    wins: int
    losses: int
    ties: int
    """Shared tasks where B scored higher, lower, the same as A."""
    method: str
    level: float = LEVEL
    lower: float = math.nan
    upper: float = math.nan
    """One-sided bounds at `level` of the mean difference (valid for any rewards in [0, 1])."""
    spread: float = math.nan
    """The standard deviation of the per-task differences (for planning)."""
    differing: list[tuple[str, float, float]] = field(default_factory=list)
    """(task, A's mean, B's mean) of every shared task whose outcome differs."""
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def mean(self) -> float:
        """The mean difference (what `decide` reads)."""
        return self.difference

    @property
    def significant(self) -> bool:
        """p ≤ 1 − level: exactly when the interval leaves 0 out (an end cut at 0 is open)."""
        return self.p_value <= 1 - self.level

    def interval_text(self) -> str:
        """`[-1.000, 0)` style: an end cut at 0 by the test is open."""
        if self.tasks == 0:
            return "—"
        open_low = self.significant and self.low == 0.0
        open_high = self.significant and self.high == 0.0
        low = "(0" if open_low else f"[{self.low:+.3f}"
        high = "0)" if open_high else f"{self.high:+.3f}]"
        return f"{low}, {high}"

    def as_json(self) -> dict[str, object]:
        """The numbers for a report (NaN as null)."""

        def number(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "tasks": self.tasks,
            "difference": number(self.difference),
            "low": number(self.low),
            "high": number(self.high),
            "lower": number(self.lower),
            "upper": number(self.upper),
            "p_value": number(self.p_value),
            "significant": self.significant,
            "level": self.level,
            "mean_a": number(self.mean_a),
            "mean_b": number(self.mean_b),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "spread": number(self.spread),
            "method": self.method,
            "differing": [{"task": t, "a": ma, "b": mb} for t, ma, mb in self.differing],
            "only_a": self.only_a,
            "only_b": self.only_b,
        }

    def text(self) -> str:
        """One line: the difference, its interval, p, and whether it is significant."""
        if self.tasks == 0:
            return "no shared task"
        plural = "s" if self.tasks != 1 else ""
        verdict = "significant" if self.significant else f"not significant with {self.tasks} task{plural}"
        return (
            f"B − A = {self.difference:+.3f}  {self.level:.0%} CI {self.interval_text()}  p = {self.p_value:.3g} "
            f"({verdict}); B better on {self.wins}, worse on {self.losses}, tied on {self.ties}"
        )


def paired_test(
    a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], level: float = LEVEL, seed: int = 0
) -> PairedTest:
    """Compare two runs given as task → rewards; tasks only one run scored are listed, not used.

    Raises:
        ValueError: a reward is not a number in [0, 1], or `level` is not in (0, 1).
    """
    check_level(level)
    mean_a, mean_b = task_means(a), task_means(b)
    shared = betting_order(t for t in mean_a if t in mean_b)
    only_a = [t for t in mean_a if t not in mean_b]
    only_b = [t for t in mean_b if t not in mean_a]
    if not shared:
        nan = math.nan
        return PairedTest(nan, nan, nan, nan, nan, nan, 0, 0, 0, "none", level, only_a=only_a, only_b=only_b)
    diffs = np.array([mean_b[t] - mean_a[t] for t in shared], dtype=float)
    diffs[np.abs(diffs) <= TIE] = 0.0
    alpha = 1 - level
    p = float(sign_flip_p_values(diffs[:, None], seed)[0])
    mean = float(diffs.mean())
    x = (diffs + 1) / 2
    lows = betting_lower(np.stack([x, 1 - x, x, 1 - x]), np.array([alpha / 2, alpha / 2, alpha, alpha]))
    low, high = min(2 * lows[0] - 1, mean), max(1 - 2 * lows[1], mean)
    lower, upper = min(2 * lows[2] - 1, mean), max(1 - 2 * lows[3], mean)
    if p > alpha:
        low, high = min(low, 0.0), max(high, 0.0)
    elif mean > 0:
        low = max(low, 0.0)
    else:
        high = min(high, 0.0)
    ordered = sorted(shared)
    return PairedTest(
        difference=mean,
        low=float(low),
        high=float(high),
        p_value=p,
        mean_a=math.fsum(mean_a[t] for t in shared) / len(shared),
        mean_b=math.fsum(mean_b[t] for t in shared) / len(shared),
        wins=int((diffs > 0).sum()),
        losses=int((diffs < 0).sum()),
        ties=int((diffs == 0).sum()),
        method=f"{_test_method(len(shared))}; {INTERVAL_METHOD}",
        level=level,
        lower=float(lower),
        upper=float(upper),
        spread=float(diffs.std(ddof=1)) if len(diffs) > 1 else math.nan,
        differing=[(t, mean_a[t], mean_b[t]) for t in ordered if abs(mean_b[t] - mean_a[t]) > TIE],
        only_a=only_a,
        only_b=only_b,
    )


def sign_flip_p_values(diffs: NDArray[np.float64], seed: int = 0) -> NDArray[np.float64]:
    """Two-sided sign-flip p-values of "no difference", one per column of `diffs` (tasks × samples,
    every column the same tasks): what `paired_test` computes for one, vectorised for simulations."""
    d = np.asarray(diffs, dtype=float)
    n = d.shape[0]
    observed = np.abs(d.sum(axis=0))
    scale = np.sqrt((d * d).sum(axis=0))
    if n > NORMAL_TASKS:
        from scipy.special import ndtr

        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(scale > 0, observed / np.where(scale > 0, scale, 1.0), 0.0)
        return np.asarray(np.minimum(1.0, 2 * (1 - ndtr(z))), dtype=float)
    signs = _signs(n, seed)
    at_least = np.zeros(d.shape[1])
    width = max(1, 2**22 // len(signs))  # bounded memory: about 4M sums (32 MB) at a time
    for start in range(0, d.shape[1], width):
        part = slice(start, start + width)
        sums = np.abs(signs @ d[:, part])
        at_least[part] = (sums >= observed[part] - 1e-12 * np.maximum(1.0, observed[part])).sum(axis=0)
    exact = n <= EXACT_FLIPS
    p = at_least / len(signs) if exact else (at_least + 1) / (len(signs) + 1)
    return np.asarray(np.where(scale > 0, p, 1.0), dtype=float)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of several p-values (family-wise error at the nominal level), in
    the order given."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _test_method(n: int) -> str:
    if n <= EXACT_FLIPS:
        return "paired sign-flip test, exact (McNemar's for 0/1)"
    if n <= NORMAL_TASKS:
        return f"paired sign-flip test, {MONTE_CARLO_FLIPS:,} seeded flips"
    return "paired sign-flip test, normal approximation"


@lru_cache(maxsize=8)
def _signs(n: int, seed: int) -> NDArray[np.float64]:
    """Every sign vector of n tasks (n ≤ `EXACT_FLIPS`), or `MONTE_CARLO_FLIPS` seeded draws."""
    if n <= EXACT_FLIPS:
        codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        return np.asarray(1.0 - 2.0 * (codes & 1), dtype=float)
    rng = np.random.default_rng(seed)
    return np.asarray(rng.choice([-1.0, 1.0], size=(MONTE_CARLO_FLIPS, n)), dtype=float)
