"""Arena's one statistics module: a run's mean with an honest interval, paired tests of two runs, pass@k,
and gate rules decided by one-sided bounds.

The unit of sampling is the task. Every mean is the mean over tasks of each task's mean over its
rollouts ("one mean"), so rollouts of one task never count as independent evidence, and the interval
is an interval for the mean over the task distribution the split draws from.

Intervals (`estimate`), never outside [0, 1] and never of zero width:
- rewards all 0 or 1 with one rollout per task: Clopper–Pearson, exact (scipy's beta quantiles);
- anything else (continuous rewards, several rollouts per task): the betting interval of
  Waudby-Smith & Ramdas ("Estimating means of bounded random variables by betting", JRSS-B 2024,
  hedged capital with the predictable plug-in bet) over the task means, which covers at its level
  for every distribution on [0, 1], so a skewed reward with three outlying tasks cannot fool it the
  way a t interval is fooled. Tasks are fed to it in the order of their ids, which does not depend
  on the rewards, so the same run always prints the same interval.

Paired comparison (`paired_test`): per shared task, B's mean minus A's; a two-sided sign-flip
(paired permutation) test of "no difference": exact enumeration up to `EXACT_FLIPS` tasks, seeded
Monte Carlo beyond, a normal approximation of the same permutation distribution past
`NORMAL_TASKS`. With 0/1 rewards and one rollout it is the exact McNemar (sign) test. The interval
inverts the same test, so it excludes 0 exactly when p ≤ 1 − level.

Gate rules (`decide`): a rule "mean ≥ t" is met when the one-sided lower bound is ≥ t, failed when
the one-sided upper bound is < t, and undecided otherwise (run more tasks: `tasks_needed`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = [
    "LEVEL",
    "Estimate",
    "PairedTest",
    "Side",
    "Status",
    "Verdict",
    "decide",
    "estimate",
    "holm",
    "pass_at_k",
    "pass_hat_k",
    "paired_test",
    "run_pass_at_k",
    "task_means",
    "tasks_needed",
]

LEVEL = 0.95
"""Every interval's and bound's confidence level unless one is given."""
UNINFORMATIVE_WIDTH = 0.5
"""A two-sided interval wider than this says little: it is printed with a note to run more tasks."""
EXACT_FLIPS = 16
"""Up to this many shared tasks the paired test enumerates every sign flip (2^16 = 65,536)."""
NORMAL_TASKS = 400
"""Past this many shared tasks the paired test uses the normal approximation of its permutation law."""
MONTE_CARLO_FLIPS = 10_000
"""Sign flips drawn (seeded) between `EXACT_FLIPS` and `NORMAL_TASKS` shared tasks."""
BETTING_TRUNCATION = 0.75
"""The bet's cap c in λ ≤ c / m (Waudby-Smith & Ramdas's recommended 1/2–3/4)."""
BINARY_METHOD = "Clopper–Pearson (exact), over tasks"
BETTING_METHOD = "betting interval (Waudby-Smith & Ramdas), over task means"
Side = Literal["at_least", "at_most"]
Status = Literal["met", "failed", "undecided"]


def task_means(rewards_by_task: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each task's mean over its rollouts (tasks without a reward are left out).

    Raises:
        ValueError: a reward is not a number in [0, 1].
    """
    means: dict[str, float] = {}
    for task, rewards in rewards_by_task.items():
        values = [_checked(r) for r in rewards]
        if values:
            means[task] = math.fsum(values) / len(values)
    return means


@dataclass(frozen=True)
class Estimate:
    """A mean over tasks with its two-sided interval and its one-sided bounds, all in [0, 1].

    Every field is NaN for an estimate over no task."""

    mean: float
    """The mean over tasks of each task's mean over its rollouts."""
    low: float
    high: float
    """The two-sided interval at `level`."""
    lower: float
    upper: float
    """The one-sided bounds at `level`: the mean is ≥ `lower` with confidence `level`, and
    (separately) ≤ `upper` with confidence `level`. What a gate rule is decided on."""
    tasks: int
    episodes: int
    method: str
    level: float = LEVEL

    @property
    def informative(self) -> bool:
        """False when the interval is so wide it says little (fewer tasks than the spread needs)."""
        return self.tasks > 0 and self.high - self.low <= UNINFORMATIVE_WIDTH

    @property
    def note(self) -> str:
        """What a reader should know beside the number ('' when nothing)."""
        if self.tasks == 0:
            return "no scored tasks"
        if not self.informative:
            return f"{self.tasks} task{'s' if self.tasks != 1 else ''}: too few for an informative interval"
        return ""

    def text(self, digits: int = 3) -> str:
        """`0.667 [0.094, 0.992]`, or `—` for no task."""
        if self.tasks == 0:
            return "—"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def estimate(rewards_by_task: Mapping[str, Sequence[float]], level: float = LEVEL) -> Estimate:
    """The mean over tasks and its interval and bounds (see the module docstring for the method).

    Raises:
        ValueError: a reward is not a number in [0, 1], or `level` is not in (0, 1).
    """
    _check_level(level)
    means = task_means(rewards_by_task)
    episodes = sum(len(rewards_by_task[task]) for task in means)
    if not means:
        nan = math.nan
        return Estimate(nan, nan, nan, nan, nan, 0, 0, "none", level)
    ordered = np.array([means[task] for task in sorted(means)], dtype=float)
    mean = float(math.fsum(ordered) / len(ordered))
    if _binary(rewards_by_task, means):
        successes = int(round(float(ordered.sum())))
        n = len(ordered)
        return Estimate(
            mean,
            _cp_lower(successes, n, (1 - level) / 2),
            _cp_upper(successes, n, (1 - level) / 2),
            _cp_lower(successes, n, 1 - level),
            _cp_upper(successes, n, 1 - level),
            n, episodes, BINARY_METHOD, level,
        )
    return Estimate(
        mean,
        _betting_lower(ordered, (1 - level) / 2),
        _betting_upper(ordered, (1 - level) / 2),
        _betting_lower(ordered, 1 - level),
        _betting_upper(ordered, 1 - level),
        len(ordered), episodes, BETTING_METHOD, level,
    )


@dataclass(frozen=True)
class Verdict:
    """A gate rule decided by a one-sided bound."""

    status: Status
    threshold: float
    side: Side
    bound: float
    """The bound the rule reads: the lower bound for `at_least`, the upper one for `at_most`."""
    tasks_needed: int | None
    """For an undecided rule: about how many tasks would decide it if the mean and spread stayed as
    observed (None: decided already, or no number of tasks decides it at this mean)."""

    @property
    def text(self) -> str:
        sign = "≥" if self.side == "at_least" else "≤"
        name = "lower" if self.side == "at_least" else "upper"
        head = f"{name} bound {self.bound:.3f} vs {sign} {self.threshold:.3f}"
        if self.status != "undecided":
            return f"{self.status}: {head}"
        more = f" (about {self.tasks_needed} tasks)" if self.tasks_needed else " (the mean sits at the threshold)"
        return f"undecided: run more tasks{more}; {head}"


def decide(est: Estimate, threshold: float, side: Side) -> Verdict:
    """Decide "mean ≥ threshold" (`at_least`) or "mean ≤ threshold" (`at_most`) by the one-sided
    bounds: met when the rule's bound is on its side; failed when the opposite bound is past the
    threshold (the data say the rule is broken); otherwise undecided."""
    if est.tasks == 0:
        return Verdict("undecided", threshold, side, math.nan, None)
    status = _status(est, threshold, side)
    needed = _tasks_to_decide(est, threshold, side) if status == "undecided" else None
    return Verdict(status, threshold, side, est.lower if side == "at_least" else est.upper, needed)


def _status(est: Estimate, threshold: float, side: Side) -> Status:
    if side == "at_least":
        return "met" if est.lower >= threshold else "failed" if est.upper < threshold else "undecided"
    return "met" if est.upper <= threshold else "failed" if est.lower > threshold else "undecided"


def tasks_needed(mean: float, threshold: float, side: Side, binary: bool = True, sd: float | None = None,
                 level: float = LEVEL, limit: int = 100_000) -> int | None:
    """Planning: the fewest tasks whose one-sided bound decides the rule if the observed mean is
    `mean` (0/1 rewards when `binary`, else task means spread with standard deviation `sd`, default
    the largest a mean allows, √(mean(1−mean))). None: not within `limit`, or `mean` is on the
    threshold. An assumption, labelled as such wherever it is printed."""
    _check_level(level)
    if mean == threshold or not 0 <= mean <= 1:
        return None
    wants_met = (mean >= threshold) if side == "at_least" else (mean <= threshold)

    def decided(n: int) -> bool:
        est = estimate(_synthetic(mean, n, binary, sd), level)
        return _status(est, threshold, side) == ("met" if wants_met else "failed")

    return _smallest(decided, limit)


@dataclass(frozen=True)
class PairedTest:
    """B − A on the tasks both runs scored: a paired permutation test and the interval it inverts to."""

    difference: float
    """The mean over shared tasks of (B's task mean − A's task mean)."""
    low: float
    high: float
    """The two-sided interval at `level` (the set of shifts the test does not reject)."""
    p_value: float
    """Two-sided, of "no difference"."""
    mean_a: float
    mean_b: float
    """Each run's mean over the shared tasks only."""
    wins: int
    losses: int
    ties: int
    """Shared tasks where B scored higher, lower, the same as A."""
    method: str
    level: float = LEVEL
    differing: list[tuple[str, float, float]] = field(default_factory=list)
    """(task, A's mean, B's mean) of every shared task whose outcome differs."""
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def significant(self) -> bool:
        return self.p_value <= 1 - self.level

    def text(self) -> str:
        """One line: the difference, its interval, p, and whether it is significant."""
        verdict = "significant" if self.significant else f"not significant with {self.tasks} task{'s' if self.tasks != 1 else ''}"
        return (f"B − A = {self.difference:+.3f}  {self.level:.0%} CI [{self.low:+.3f}, {self.high:+.3f}]  "
                f"p = {self.p_value:.3g} ({verdict}); B better on {self.wins}, worse on {self.losses}, tied on {self.ties}")


def paired_test(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], level: float = LEVEL,
                tolerance: float = 1e-9, seed: int = 0) -> PairedTest:
    """Compare two runs given as task → rewards; tasks only one run scored are listed, not used.

    Raises:
        ValueError: a reward is not a number in [0, 1], or `level` is not in (0, 1).
    """
    _check_level(level)
    mean_a, mean_b = task_means(a), task_means(b)
    shared = sorted(task for task in mean_a if task in mean_b)
    diffs = np.array([mean_b[t] - mean_a[t] for t in shared], dtype=float)
    diffs[np.abs(diffs) <= tolerance] = 0.0
    wins, losses = int((diffs > 0).sum()), int((diffs < 0).sum())
    only_a = [t for t in mean_a if t not in mean_b]
    only_b = [t for t in mean_b if t not in mean_a]
    differing = [(t, mean_a[t], mean_b[t]) for t, d in zip(shared, diffs) if d != 0]
    if not shared:
        nan = math.nan
        return PairedTest(nan, nan, nan, nan, nan, nan, 0, 0, 0, "none", level, [], only_a, only_b)
    flips = _SignFlips(len(shared), seed)
    alpha = 1 - level
    p = flips.p_value(diffs)
    low, high = flips.interval(diffs, alpha)
    # The interval is the set of shifts not rejected: make it agree with p at 0 exactly even where a
    # bisection's resolution would leave 0 a hair outside or inside.
    if p > alpha:
        low, high = min(low, 0.0), max(high, 0.0)
    return PairedTest(
        difference=float(diffs.mean()), low=low, high=high, p_value=p,
        mean_a=math.fsum(mean_a[t] for t in shared) / len(shared),
        mean_b=math.fsum(mean_b[t] for t in shared) / len(shared),
        wins=wins, losses=losses, ties=len(shared) - wins - losses, method=flips.method, level=level,
        differing=differing, only_a=only_a, only_b=only_b,
    )


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


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k for one task (Chen et al. 2021): the chance that at least one
    of k rollouts drawn from its n succeeds, c of n having succeeded.

    Raises:
        ValueError: not 0 ≤ c ≤ n and 1 ≤ k ≤ n.
    """
    _check_counts(n, c, k)
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k for one task (Yao et al. 2024, τ-bench): the chance that all
    k rollouts drawn from its n succeed.

    Raises:
        ValueError: not 0 ≤ c ≤ n and 1 ≤ k ≤ n.
    """
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def run_pass_at_k(rewards_by_task: Mapping[str, Sequence[float]], k: int, success: float = 1.0,
                  every: bool = False) -> float | None:
    """pass@k (or pass^k with `every`) of a run: its mean over the tasks with at least k rollouts,
    a rollout succeeding when its reward is ≥ `success`. None when no task has k rollouts."""
    values = []
    for rewards in rewards_by_task.values():
        n = len(rewards)
        if n >= k:
            c = sum(1 for r in rewards if _checked(r) >= success - 1e-12)
            values.append(pass_hat_k(n, c, k) if every else pass_at_k(n, c, k))
    return math.fsum(values) / len(values) if values else None


# ---- intervals -------------------------------------------------------------------------------------


def _checked(reward: float) -> float:
    value = float(reward)
    if not math.isfinite(value) or value < -1e-9 or value > 1 + 1e-9:
        raise ValueError(f"a reward must be a number in [0, 1], got {reward!r}")
    return min(1.0, max(0.0, value))


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"a confidence level is in (0, 1), got {level!r}")


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n={n}, c={c}, k={k}")


def _binary(rewards_by_task: Mapping[str, Sequence[float]], means: Mapping[str, float]) -> bool:
    return all(len(rewards_by_task[t]) == 1 and means[t] in (0.0, 1.0) for t in means)


def _cp_lower(successes: int, n: int, alpha: float) -> float:
    from scipy.special import betaincinv

    return 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, alpha))


def _cp_upper(successes: int, n: int, alpha: float) -> float:
    from scipy.special import betaincinv

    return 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1 - alpha))


def _betting_lower(x: np.ndarray, alpha: float) -> float:
    """The one-sided lower bound at 1 − alpha: the smallest m whose capital, betting that the mean
    is above m, never reaches 1/alpha (a grid of m at once, then bisection below its first point)."""
    bets = _plug_in_bets(x, alpha)
    threshold = math.log(1 / alpha)
    grid = np.linspace(0.0, 1.0, 201)[1:-1]
    inside = _log_capital(x, bets, grid) < threshold
    if not inside.any():
        return float(grid[-1])
    first = int(np.argmax(inside))
    lo, hi = (float(grid[first - 1]) if first else 0.0), float(grid[first])
    if first == 0 and _log_capital(x, bets, np.array([1e-12]))[0] < threshold:
        return 0.0
    for _ in range(30):
        mids = np.linspace(lo, hi, 9)[1:-1]
        inside = _log_capital(x, bets, mids) < threshold
        if inside.any():
            k = int(np.argmax(inside))
            lo, hi = (float(mids[k - 1]) if k else lo), float(mids[k])
        else:
            lo = float(mids[-1])
        if hi - lo < 1e-9:
            break
    return hi


def _betting_upper(x: np.ndarray, alpha: float) -> float:
    """The one-sided upper bound: the lower bound of 1 − x, mirrored."""
    return 1.0 - _betting_lower(1.0 - x, alpha)


def _plug_in_bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bet sizes λ_t: each reads only the task means before t."""
    n = len(x)
    seen = np.arange(n, dtype=float)
    mean_so_far = (0.5 + np.cumsum(x)) / (seen + 2)
    squares = (x - mean_so_far) ** 2
    variance_before = (0.25 + np.concatenate(([0.0], np.cumsum(squares)[:-1]))) / (seen + 1)
    return np.asarray(np.sqrt(2 * math.log(1 / alpha) / (n * variance_before)))


def _log_capital(x: np.ndarray, bets: np.ndarray, ms: np.ndarray) -> np.ndarray:
    """For each m in `ms`: the running maximum of the log capital of the bet that the mean is above
    m, each bet capped at c/m so capital stays positive. Ville's inequality makes its reaching
    log(1/alpha) a level-alpha event when the mean is m."""
    capped = np.minimum(bets[None, :], BETTING_TRUNCATION / ms[:, None])
    steps = np.log1p(capped * (x[None, :] - ms[:, None]))
    return np.asarray(np.cumsum(steps, axis=1).max(axis=1))


# ---- decisions and planning ------------------------------------------------------------------------


def _synthetic(mean: float, n: int, binary: bool, sd: float | None) -> dict[str, list[float]]:
    """n task means with this mean (and spread, for continuous rewards), for planning."""
    if binary:
        successes = round(mean * n)
        return {f"t{i:06d}": [1.0 if i < successes else 0.0] for i in range(n)}
    spread = math.sqrt(mean * (1 - mean)) if sd is None else sd
    half = min(spread, mean, 1 - mean)
    # Two-point task means mean ± half, alternating (deterministic, the given mean and spread).
    values = [mean + half if i % 2 == 0 else mean - half for i in range(n)]
    return {f"t{i:06d}": [v] for i, v in enumerate(values)}


def _tasks_to_decide(est: Estimate, threshold: float, side: Side) -> int | None:
    binary = est.method == BINARY_METHOD
    return tasks_needed(est.mean, threshold, side, binary=binary, level=est.level)


def _smallest(decided: Callable[[int], bool], limit: int) -> int | None:
    n = 2
    while n <= limit and not decided(n):
        n *= 2
    if n > limit:
        return None if not decided(limit) else _bisect(decided, n // 2, limit)
    return _bisect(decided, max(1, n // 2), n)


def _bisect(decided: Callable[[int], bool], lo: int, hi: int) -> int:
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decided(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---- paired permutation test -----------------------------------------------------------------------


class _SignFlips:
    """The sign-flip law of a sum of paired differences: exact, Monte Carlo (seeded) or normal."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        if n <= EXACT_FLIPS:
            codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
            self.signs: np.ndarray | None = 1.0 - 2.0 * (codes & 1)
            self.method = "paired sign-flip permutation test, exact"
        elif n <= NORMAL_TASKS:
            rng = np.random.default_rng(seed)
            self.signs = rng.choice([-1.0, 1.0], size=(MONTE_CARLO_FLIPS, n))
            self.method = f"paired sign-flip permutation test, {MONTE_CARLO_FLIPS:,} seeded flips"
        else:
            self.signs = None
            self.method = "paired sign-flip permutation test, normal approximation"

    def p_value(self, d: np.ndarray) -> float:
        observed = abs(float(d.sum()))
        if not np.any(d):
            return 1.0
        if self.signs is None:
            from scipy.special import ndtr

            z = observed / math.sqrt(float((d * d).sum()))
            return float(min(1.0, 2 * (1 - ndtr(z))))
        sums = np.abs(self.signs @ d)
        at_least = int((sums >= observed - 1e-12 * max(1.0, observed)).sum())
        if self.n <= EXACT_FLIPS:
            return at_least / len(sums)
        return (at_least + 1) / (len(sums) + 1)

    def interval(self, d: np.ndarray, alpha: float) -> tuple[float, float]:
        """The shifts δ the test does not reject for d − δ, searched outward from the mean."""
        centre = float(d.mean())

        def accepted(delta: float) -> bool:
            return self.p_value(d - delta) > alpha

        return (self._edge(accepted, centre, -1.0), self._edge(accepted, centre, 1.0))

    @staticmethod
    def _edge(accepted: Callable[[float], bool], centre: float, end: float) -> float:
        if accepted(end):
            return end
        inside, outside = centre, end
        for _ in range(40):
            mid = (inside + outside) / 2
            if accepted(mid):
                inside = mid
            else:
                outside = mid
        return inside
