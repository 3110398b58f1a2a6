"""A/B of two sets of bench runs, paired in the order they ran: each figure's after/before ratio with a confidence bound.

A bench figure on a shared machine drifts by more than the change one wants to see (the same checkout's runs
spread by 20 %), so one run a side proves nothing. Run the two checkouts alternately, N times each, with the
same options; pair the i-th run of one with the i-th of the other; and decide on the geometric mean of the
paired ratios with a Student-t interval over their logarithms: a regression beyond `limit` is claimed only
when the whole interval is past it, "within" only when the whole interval is short of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from scipy import stats as scipy_stats

from arena.errors import UsageError
from runtime_bench.model import BenchReport, LevelResult
from runtime_bench.report import read_report

__all__ = ["FIGURES", "MIN_PAIRS", "Comparison", "Figure", "Outcome", "compare", "load_reports", "render"]

Better = Literal["lower", "higher"]
Verdict = Literal["within", "regressed", "improved", "undecided"]

MIN_PAIRS = 3
"""Pairs a figure needs for a verdict other than `undecided` (two identical ratios would give a zero-width interval)."""

_RUN_ONLY = {"output_dir"}
"""Keys of a run's saved options that may differ between the runs of an A/B."""


@dataclass(frozen=True)
class Figure:
    """One figure of a level: its name, how it is read off, and which way is better."""

    name: str
    read: Callable[[LevelResult], float | None]
    better: Better


FIGURES = (
    Figure(
        "overhead p50 (s)", lambda level: level.phases["overhead"].p50 if "overhead" in level.phases else None, "lower"
    ),
    Figure("rollouts/s", lambda level: level.throughput, "higher"),
    Figure("CPU-s per rollout", lambda level: level.cpu.per_rollout_s, "lower"),
)


@dataclass(frozen=True)
class Comparison:
    """One figure of one configuration at one level across the pairs whose two runs had no failed rollout."""

    config: str
    level: int
    figure: str
    before: list[float]
    after: list[float]
    ratio: float
    """Geometric mean of after/before over the pairs."""
    low: float
    high: float
    verdict: Verdict


@dataclass(frozen=True)
class Outcome:
    """What an A/B found: the comparisons, the runs with failed rollouts, and what only some runs hold."""

    comparisons: list[Comparison]
    failed_runs: dict[tuple[str, int], tuple[int, int]]
    """(configuration, level) → runs with a failed rollout (before, after), where either side had one."""
    partial: list[tuple[str, int]]
    """(configuration, level) that some runs lack: compared over the pairs that hold it."""

    @property
    def regressed(self) -> bool:
        """A figure regressed, or the after side failed rollouts in more runs than before."""
        worse_failing = any(after > before for before, after in self.failed_runs.values())
        return worse_failing or any(c.verdict == "regressed" for c in self.comparisons)


def compare(
    before: Sequence[BenchReport], after: Sequence[BenchReport], limit: float = 0.10, confidence: float = 0.95
) -> Outcome:
    """Every figure of every configuration and level either side ran, `before[i]` paired with `after[i]`.

    Raises:
        UsageError: the sides differ in length, hold fewer than two runs each, were not run alternately
            (pair i wholly before pair i+1) or not with the same options.
    """
    if len(before) != len(after):
        raise UsageError(f"an A/B pairs runs: {len(before)} before, {len(after)} after")
    if len(before) < 2:
        raise UsageError(f"an A/B needs at least two pairs of runs for an interval, got {len(before)}")
    _check_alternated(before, after)
    _check_same_options([*before, *after])
    keys = [_levels(report) for report in [*before, *after]]
    every, some = set.intersection(*keys), set.union(*keys)
    comparisons: list[Comparison] = []
    failed: dict[tuple[str, int], tuple[int, int]] = {}
    for config, level in sorted(some):
        counts = (_failing(before, config, level), _failing(after, config, level))
        if any(counts):
            failed[(config, level)] = counts
        for figure in FIGURES:
            pairs = [(_read(b, config, level, figure), _read(a, config, level, figure)) for b, a in zip(before, after)]
            kept = [(b, a) for b, a in pairs if b is not None and a is not None and _usable(b) and _usable(a)]
            if len(kept) >= 2:
                comparisons.append(_comparison(config, level, figure, kept, limit, confidence))
    return Outcome(comparisons, failed, sorted(some - every))


def _usable(value: float) -> bool:
    return math.isfinite(value) and value > 0


def _comparison(
    config: str, level: int, figure: Figure, kept: list[tuple[float, float]], limit: float, confidence: float
) -> Comparison:
    logs = [math.log(a / b) for b, a in kept]
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    low, high = math.exp(mean - half), math.exp(mean + half)
    verdict = _verdict(low, high, limit, figure.better) if n >= MIN_PAIRS else "undecided"
    return Comparison(
        config, level, figure.name, [b for b, _ in kept], [a for _, a in kept], math.exp(mean), low, high, verdict
    )


def _verdict(low: float, high: float, limit: float, better: Better) -> Verdict:
    """The interval [low, high] of after/before against a change of `limit` (a fraction) either way."""
    if better == "lower":  # a ratio above 1 + limit is worse
        if low > 1 + limit:
            return "regressed"
        if high < 1 - limit:
            return "improved"
        return "within" if high < 1 + limit else "undecided"
    if high < 1 - limit:  # higher is better: a ratio below 1 - limit is worse
        return "regressed"
    if low > 1 + limit:
        return "improved"
    return "within" if low > 1 - limit else "undecided"


def _started(report: BenchReport) -> datetime:
    try:
        return datetime.fromisoformat(report.meta.started or "")
    except ValueError:
        raise UsageError(
            f"bench run {report.meta.bench_id or '(no id)'} records no readable start time "
            f"({report.meta.started!r}): it cannot be paired"
        ) from None


def _check_alternated(before: Sequence[BenchReport], after: Sequence[BenchReport]) -> None:
    """Pair i must have started wholly before pair i+1, or the machine's drift lands on one side."""
    starts = [(_started(b), _started(a)) for b, a in zip(before, after)]
    for i in range(len(starts) - 1):
        if max(starts[i]) > min(starts[i + 1]):
            raise UsageError(
                f"the runs were not made alternately: pair {i + 1} (before {starts[i][0]}, after {starts[i][1]}) "
                f"overlaps pair {i + 2} (before {starts[i + 1][0]}, after {starts[i + 1][1]}); "
                "run the two checkouts in turn, one run each per pair"
            )


def _check_same_options(reports: Sequence[BenchReport]) -> None:
    """Every run's saved options (those both checkouts know) and rollouts per level must agree."""
    first = reports[0]
    for other in reports[1:]:
        shared = (set(first.meta.config) & set(other.meta.config)) - _RUN_ONLY
        differ = sorted(k for k in shared if first.meta.config[k] != other.meta.config[k])
        if first.meta.rollouts != other.meta.rollouts:
            differ.append("rollouts")
        if differ:
            raise UsageError(
                f"runs {first.meta.bench_id} and {other.meta.bench_id} were made with other options "
                f"({', '.join(differ)}): an A/B compares runs of the same options"
            )


def _levels(report: BenchReport) -> set[tuple[str, int]]:
    return {(config.label, level.level) for config in report.configs for level in config.levels}


def _level(report: BenchReport, config: str, level: int) -> LevelResult | None:
    for result in report.configs:
        if result.label == config:
            for found in result.levels:
                if found.level == level:
                    return found
    return None


def _failing(reports: Sequence[BenchReport], config: str, level: int) -> int:
    return sum(1 for report in reports if (found := _level(report, config, level)) is not None and found.failures)


def _read(report: BenchReport, config: str, level: int, figure: Figure) -> float | None:
    found = _level(report, config, level)
    return figure.read(found) if found is not None and not found.failures else None


def load_reports(folder: Path) -> list[BenchReport]:
    """Every bench report.json under `folder`, in the order the runs started.

    Raises:
        UsageError: the folder holds none, or one is not a bench report.
    """
    paths = sorted(folder.rglob("report.json")) if folder.is_dir() else []
    if not paths:
        raise UsageError(f"{folder}: no bench report.json under it (give the folder holding one run's folder per run)")
    return sorted((read_report(path) for path in paths), key=lambda report: report.meta.started or "")


def render(outcome: Outcome, limit: float, confidence: float) -> str:
    """A markdown table of the comparisons, the runs with failed rollouts, then what the verdicts mean."""
    lines = [
        f"| configuration | c | figure | pairs | after ÷ before | {confidence:.0%} interval | verdict |",
        "| --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for c in outcome.comparisons:
        lines.append(
            f"| {c.config} | {c.level} | {c.figure} | {len(c.before)} | {c.ratio:.3f} | "
            f"[{c.low:.3f}, {c.high:.3f}] | {c.verdict} |"
        )
    lines.append("")
    for (config, level), (before, after) in outcome.failed_runs.items():
        worse = " (worse after)" if after > before else ""
        lines.append(
            f"failed rollouts: {config} at c={level} in {before} run(s) before, {after} after{worse}; "
            "those pairs are left out of its figures"
        )
    for config, level in outcome.partial:
        lines.append(f"not in every run: {config} at c={level}, compared over the pairs that hold it")
    lines.append(
        f"within: the whole interval is short of a {limit:.0%} change for the worse; regressed: the whole interval "
        f"is past it; improved: the whole interval is past a {limit:.0%} change for the better; undecided: more "
        f"pairs are needed (at least {MIN_PAIRS} for any verdict)."
    )
    return "\n".join(lines)
