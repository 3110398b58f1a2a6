"""Arena's one statistics interface: a run's mean with an honest interval, paired tests of two runs,
pass@k, and gate rules decided by one-sided bounds.

The unit of sampling is the task. Every mean is the mean over tasks of each task's mean over its
rollouts ("one mean"), so rollouts of one task never count as independent evidence, and the interval
is an interval for the mean over the task distribution the split draws from.

Intervals (`estimate`), never outside [0, 1] and never of zero width:
- rewards all 0 or 1 with one rollout per task: Clopper–Pearson, exact (scipy's beta quantiles);
- anything else (continuous rewards, several rollouts per task): the betting interval of
  Waudby-Smith & Ramdas over the task means (`bounds`), which covers at its level for every
  distribution on [0, 1], so a skewed reward with three outlying tasks cannot fool it the way a t
  interval is fooled.
Both are conservative: they cover at least at their level, at any number of tasks (the coverage
check, `coverage`, measures by how much). Each contains the mean it is printed beside.

Paired comparison (`paired_test`, in `paired`): an exact sign-flip test of "no difference" and the
interval that agrees with it. Gate rules (`decide`): a rule "mean ≥ t" is met when the one-sided
lower bound is ≥ t, failed when the one-sided upper bound is < t, and undecided otherwise (run more
tasks: `tasks_needed`). The same reads a paired difference (`PairedTest`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from arena_kit.gate.bounds import (
    LEVEL,
    betting_lower,
    betting_order,
    check_level,
    checked,
    cp_lower,
    cp_upper,
    task_means,
)
from arena_kit.gate.paired import PairedTest, holm, paired_test

__all__ = [
    "LEVEL",
    "Estimate",
    "PairedTest",
    "Side",
    "Status",
    "Verdict",
    "decide",
    "detectable_difference",
    "estimate",
    "holm",
    "intervals",
    "pass_at_k",
    "pass_hat_k",
    "paired_test",
    "run_pass_at_k",
    "task_means",
    "tasks_needed",
]

UNINFORMATIVE_WIDTH = 0.5
"""A two-sided interval wider than this says little: it is printed with a note to run more tasks."""
BINARY_METHOD = "Clopper–Pearson (exact), over tasks"
BETTING_METHOD = "betting interval (Waudby-Smith & Ramdas), over task means"
PLANNING_LIMIT = 100_000
"""`tasks_needed` looks no further than this many tasks."""
Side = Literal["at_least", "at_most"]
Status = Literal["met", "failed", "undecided"]


@dataclass(frozen=True)
class Estimate:
    """A mean over tasks with its two-sided interval and its one-sided bounds, all in [0, 1].

    Every number is NaN for an estimate over no task."""

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
    spread: float = math.nan
    """The standard deviation of the task means (for planning how many tasks a rule needs)."""

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

    def as_json(self) -> dict[str, float | int | str | None]:
        """The numbers for a report (NaN as null)."""
        return {
            "mean": _number(self.mean),
            "low": _number(self.low),
            "high": _number(self.high),
            "lower": _number(self.lower),
            "upper": _number(self.upper),
            "level": self.level,
            "tasks": self.tasks,
            "episodes": self.episodes,
            "method": self.method,
            "note": self.note,
        }


def _number(x: float) -> float | None:
    return None if math.isnan(x) else x


def estimate(rewards_by_task: Mapping[str, Sequence[float]], level: float = LEVEL) -> Estimate:
    """The mean over tasks and its interval and bounds (see the module docstring for the method).

    Raises:
        ValueError: a reward is not a number in [0, 1], or `level` is not in (0, 1).
    """
    check_level(level)
    means = task_means(rewards_by_task)
    if not means:
        nan = math.nan
        return Estimate(nan, nan, nan, nan, nan, 0, 0, "none", level)
    episodes = sum(len(rewards_by_task[task]) for task in means)
    ordered = np.array([means[task] for task in betting_order(means)], dtype=float)
    binary = all(len(rewards_by_task[t]) == 1 and means[t] in (0.0, 1.0) for t in means)
    low, high, lower, upper = (float(v[0]) for v in intervals(ordered[None, :], binary, level))
    return Estimate(
        mean=math.fsum(ordered) / len(ordered),
        low=low,
        high=high,
        lower=lower,
        upper=upper,
        tasks=len(ordered),
        episodes=episodes,
        method=BINARY_METHOD if binary else BETTING_METHOD,
        level=level,
        spread=float(ordered.std(ddof=1)) if len(ordered) > 1 else math.nan,
    )


def intervals(means: NDArray[np.float64], binary: bool, level: float = LEVEL) -> tuple[NDArray[np.float64], ...]:
    """(low, high, lower, upper) for every row of task means (rows × tasks, in betting order): what
    `estimate` computes for one run, for many at once (`binary`: every value is a 0/1 outcome of one
    rollout, so Clopper–Pearson applies). Every interval contains its row's mean."""
    check_level(level)
    x = np.atleast_2d(np.asarray(means, dtype=float))
    alpha, n = 1 - level, x.shape[1]
    mean = x.mean(axis=1)
    if binary:
        k = np.rint(x.sum(axis=1)).astype(np.int64)
        low, high = cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)
        lower, upper = cp_lower(k, n, alpha), cp_upper(k, n, alpha)
    else:
        rows = np.concatenate([x, 1 - x, x, 1 - x])
        alphas = np.repeat([alpha / 2, alpha / 2, alpha, alpha], len(x))
        low, mirrored_high, lower, mirrored_upper = np.split(betting_lower(rows, alphas), 4)
        high, upper = 1 - mirrored_high, 1 - mirrored_upper
    return (np.minimum(low, mean), np.maximum(high, mean), np.minimum(lower, mean), np.maximum(upper, mean))


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
    observed (None: decided already, or no number of tasks within reach decides it at this mean)."""
    opposite: float = math.nan
    """The other one-sided bound: a rule fails when it is past the threshold."""

    @property
    def text(self) -> str:
        sign = "≥" if self.side == "at_least" else "≤"
        name = "lower" if self.side == "at_least" else "upper"
        head = f"{name} bound {self.bound:.3f} vs {sign} {self.threshold:.3f}"
        if self.status == "failed":
            other, past = ("upper", "<") if self.side == "at_least" else ("lower", ">")
            return f"failed: {other} bound {self.opposite:.3f} {past} {self.threshold:.3f}"
        if self.status == "met":
            return f"met: {head}"
        more = f" (about {self.tasks_needed})" if self.tasks_needed else " (the mean sits at the threshold)"
        return f"undecided: run more tasks{more}; {head}"


def decide(est: Estimate | PairedTest, threshold: float, side: Side) -> Verdict:
    """Decide "mean ≥ threshold" (`at_least`) or "mean ≤ threshold" (`at_most`) by the one-sided
    bounds of a run's mean or of a paired difference: met when the rule's bound is on its side;
    failed when the opposite bound is past the threshold (the data say the rule is broken);
    otherwise undecided, with about how many tasks would decide it."""
    if est.tasks == 0:
        return Verdict("undecided", threshold, side, math.nan, None)
    status = _status(est.lower, est.upper, threshold, side)
    needed = None
    if status == "undecided":
        paired = isinstance(est, PairedTest)
        needed = tasks_needed(
            est.mean,
            threshold,
            side,
            binary=not paired and est.method == BINARY_METHOD,
            sd=est.spread,
            level=est.level,
            paired=paired,
        )
    bound, opposite = (est.lower, est.upper) if side == "at_least" else (est.upper, est.lower)
    return Verdict(status, threshold, side, bound, needed, opposite)


def _status(lower: float, upper: float, threshold: float, side: Side) -> Status:
    if side == "at_least":
        return "met" if lower >= threshold else "failed" if upper < threshold else "undecided"
    return "met" if upper <= threshold else "failed" if lower > threshold else "undecided"


def tasks_needed(
    mean: float,
    threshold: float,
    side: Side,
    binary: bool = True,
    sd: float | None = None,
    level: float = LEVEL,
    paired: bool = False,
    limit: int = PLANNING_LIMIT,
) -> int | None:
    """Planning: the fewest tasks whose one-sided bound decides the rule (met or failed, whichever
    the mean is on the side of) if the observed mean stayed `mean` — of 0/1 rewards when `binary`,
    else of task means (or, `paired`, per-task differences in [−1, 1]) spread with standard
    deviation `sd` (None or NaN: the largest the mean allows). None: not within `limit` tasks, or
    `mean` is on the threshold. An assumption, to be labelled as such wherever it is printed."""
    check_level(level)
    low_end = -1.0 if paired else 0.0
    if mean == threshold or not low_end <= mean <= 1:
        return None
    wants = "met" if (mean >= threshold) == (side == "at_least") else "failed"
    # A paired difference d in [−1, 1] is bet on as (d + 1) / 2 in [0, 1].
    unit_mean, unit_threshold = ((mean + 1) / 2, (threshold + 1) / 2) if paired else (mean, threshold)
    unit_sd = None if sd is None or not math.isfinite(sd) else sd / 2 if paired else sd

    def decided(n: int) -> bool:
        x = _synthetic(unit_mean, n, binary and not paired, unit_sd)
        _, _, lower, upper = intervals(x[None, :], binary and not paired, level)
        return _status(float(lower[0]), float(upper[0]), unit_threshold, side) == wants

    return _smallest(decided, limit)


def detectable_difference(tasks: int, sd: float, level: float = LEVEL) -> float | None:
    """Planning: the smallest mean difference B − A whose two-sided interval over `tasks` shared
    tasks would leave 0 out, if the per-task differences had that mean and standard deviation `sd`
    (an assumption, to be labelled as such). Never 0; None when no difference up to 1 would (too
    few tasks for any).

    Raises:
        ValueError: `tasks` < 1, `sd` not in [0, 1], or `level` not in (0, 1).
    """
    check_level(level)
    if tasks < 1 or not 0 <= sd <= 1:
        raise ValueError(f"need tasks ≥ 1 and 0 ≤ sd ≤ 1, got tasks={tasks}, sd={sd}")

    def detected(delta: float) -> bool:
        x = _synthetic((delta + 1) / 2, tasks, False, sd / 2)
        low = betting_lower(x[None, :], (1 - level) / 2)
        return float(low[0]) > 0.5

    if not detected(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(20):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if detected(mid) else (mid, hi)
    return hi


def _synthetic(mean: float, n: int, binary: bool, sd: float | None) -> NDArray[np.float64]:
    """n task means with this mean (and spread), for planning: 0/1 outcomes, or two points mean ±
    sd alternating (deterministic; the spread clipped to what [0, 1] allows)."""
    if binary:
        return (np.arange(n) < round(mean * n)).astype(float)
    spread = math.sqrt(mean * (1 - mean)) if sd is None else sd
    half = min(spread, mean, 1 - mean)
    return np.where(np.arange(n) % 2 == 0, mean + half, mean - half)


def _smallest(decided: Callable[[int], bool], limit: int) -> int | None:
    """The fewest tasks (2 to `limit`) that decide: doubling, then bisection."""
    hi = 2
    while not decided(hi):
        if hi >= limit:
            return None
        hi = min(2 * hi, limit)
    return _bisect(decided, hi // 2, hi)


def _bisect(decided: Callable[[int], bool], lo: int, hi: int) -> int:
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decided(mid):
            hi = mid
        else:
            lo = mid
    return hi


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


def run_pass_at_k(
    rewards_by_task: Mapping[str, Sequence[float]], k: int, success: float = 1.0, every: bool = False
) -> float | None:
    """pass@k (or pass^k with `every`) of a run: its mean over the tasks with at least k rollouts,
    a rollout succeeding when its reward is ≥ `success`. None when no task has k rollouts."""
    values = []
    for rewards in rewards_by_task.values():
        n = len(rewards)
        if n >= k:
            c = sum(1 for r in rewards if checked(r) >= success - 1e-12)
            values.append(pass_hat_k(n, c, k) if every else pass_at_k(n, c, k))
    return math.fsum(values) / len(values) if values else None


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n={n}, c={c}, k={k}")
