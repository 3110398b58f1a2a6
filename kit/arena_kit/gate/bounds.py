"""The bounds under every Arena interval, for many samples at once: exact binomial (Clopper–Pearson)
quantiles and the betting bounds of Waudby-Smith & Ramdas over task means in [0, 1].

Batched so that the coverage check (`arena_kit.gate.coverage`) runs thousands of simulated runs
through the very code `estimate` runs one run through.

The betting bound. For a candidate mean m, a gambler starts with capital 1 and bets on each task
mean x_t in turn that the mean is above m, multiplying the capital by 1 + λ_t (x_t − m); the bet
λ_t ≥ 0 reads only the task means before t (the predictable plug-in of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 2024, §5), capped at c/m so the
capital stays positive. If the mean is m the capital is a nonnegative martingale, so by Ville's
inequality it ever reaches 1/α with probability at most α, whatever the distribution on [0, 1]:
the lower bound is the smallest m whose capital never does. Every factor falls as m grows, so
the capital does too, and bisection finds that m exactly (to `BISECTION_STEPS` halvings).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BETTING_TRUNCATION",
    "LEVEL",
    "betting_lower",
    "betting_order",
    "check_level",
    "checked",
    "cp_lower",
    "cp_upper",
    "task_means",
]

Floats = NDArray[np.float64]

LEVEL = 0.95
"""Every interval's and bound's confidence level unless one is given."""
BETTING_TRUNCATION = 0.75
"""The bet's cap c in λ ≤ c / m (Waudby-Smith & Ramdas recommend 1/2 to 3/4): a task mean of 0
costs at most this share of the capital."""
WIDE = 64
"""From this many samples at once the running capital is summed a task at a time (numpy's cumsum
over a long axis is several times slower than adding whole rows)."""
BISECTION_STEPS = 30
"""Halvings of [0, 1] per bound: 2^-30 ≈ 1e-9, far below the three digits a table prints (the
bound is the upper end of the last bracket, so it errs on the safe side)."""


def checked(reward: float) -> float:
    """A reward as a float in [0, 1] (a rounding error past either end is clipped).

    Raises:
        ValueError: not a finite number in [0, 1].
    """
    value = float(reward)
    if not math.isfinite(value) or value < -1e-9 or value > 1 + 1e-9:
        raise ValueError(f"a reward must be a number in [0, 1], got {reward!r}")
    return min(1.0, max(0.0, value))


def check_level(level: float) -> None:
    """Raises ValueError unless 0 < level < 1."""
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is in (0, 1), got {level!r}")


def task_means(rewards_by_task: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each task's mean over its rollouts (tasks without a reward are left out).

    Raises:
        ValueError: a reward is not a number in [0, 1].
    """
    means: dict[str, float] = {}
    for task, rewards in rewards_by_task.items():
        values = [checked(r) for r in rewards]
        if values:
            means[task] = math.fsum(values) / len(values)
    return means


def betting_order(tasks: Iterable[str]) -> list[str]:
    """The order tasks are bet on: by a hash of their ids. It does not depend on the rewards (the
    bound stays valid) nor on how ids were numbered (a split listed easy tasks first would bias
    a bet made in id order), and the same run always gets the same bound."""
    return sorted(tasks, key=lambda task: (hashlib.sha256(task.encode()).digest(), task))


def cp_lower(successes: NDArray[np.int64] | int, n: int, alpha: float) -> Floats:
    """The exact (Clopper–Pearson) one-sided lower bound at 1 − alpha of a binomial rate."""
    from scipy.special import betaincinv  # the beta quantile; imported when an interval is computed

    k = np.asarray(successes, dtype=float)
    safe = np.maximum(k, 1.0)
    return np.asarray(np.where(k == 0, 0.0, betaincinv(safe, n - safe + 1, alpha)), dtype=float)


def cp_upper(successes: NDArray[np.int64] | int, n: int, alpha: float) -> Floats:
    """The exact (Clopper–Pearson) one-sided upper bound at 1 − alpha of a binomial rate."""
    k = np.asarray(successes)
    return np.asarray(1.0 - cp_lower(n - k, n, alpha), dtype=float)


def betting_lower(x: Floats, alphas: Floats | float) -> Floats:
    """One-sided lower bounds of the mean: row i of `x` (task means in [0, 1], in betting order)
    at confidence 1 − alphas[i]. Rows are bisected together, one capital evaluation per halving."""
    rows = np.atleast_2d(np.asarray(x, dtype=float))
    alpha = np.broadcast_to(np.asarray(alphas, dtype=float), (rows.shape[0],))
    # Tasks along axis 0: running sums over tasks then add whole rows of samples at a time.
    tasks = np.ascontiguousarray(rows.T)
    bets = _plug_in_bets(tasks, alpha)
    threshold = np.log(1 / alpha)
    lo, hi = np.zeros(rows.shape[0]), np.ones(rows.shape[0])
    for _ in range(BISECTION_STEPS):
        m = (lo + hi) / 2
        rejected = _peak_log_capital(tasks, bets, m) >= threshold
        lo, hi = np.where(rejected, m, lo), np.where(rejected, hi, m)
    # `hi` is never rejected (a mean of 1 wins no bet); a bound within a few halvings of 0 is 0.
    return np.where(hi < 2.0 ** (3 - BISECTION_STEPS), 0.0, hi)


def _plug_in_bets(x: Floats, alpha: Floats) -> Floats:
    """The predictable plug-in bet sizes λ_t = sqrt(2 log(1/α) / (n σ²_{t−1})) (tasks × samples):
    σ² is a variance estimate of the task means before t, shrunk towards 1/4 (the largest a mean
    in [0, 1] has)."""
    n = x.shape[0]
    seen = np.arange(n, dtype=float)[:, None]
    mean_so_far = (0.5 + np.cumsum(x, axis=0)) / (seen + 2)
    squares = (x - mean_so_far) ** 2
    before = np.concatenate((np.zeros((1, x.shape[1])), np.cumsum(squares, axis=0)[:-1]), axis=0)
    variance_before = (0.25 + before) / (seen + 1)
    return np.asarray(np.sqrt(2 * np.log(1 / alpha)[None, :] / (n * variance_before)), dtype=float)


def _peak_log_capital(x: Floats, bets: Floats, m: Floats) -> Floats:
    """Per sample (column): the highest log capital reached betting that the mean is above its m."""
    capped = np.minimum(bets, BETTING_TRUNCATION / m[None, :])
    steps = np.log1p(capped * (x - m[None, :]))
    if steps.shape[1] < WIDE:
        return np.asarray(np.cumsum(steps, axis=0).max(axis=0), dtype=float)
    running, peak = steps[0].copy(), steps[0].copy()
    for row in steps[1:]:  # many samples: a task at a time, each a whole row at once
        running += row
        np.maximum(peak, running, out=peak)
    return np.asarray(peak, dtype=float)
