"""A/B of two sets of bench runs, paired in the order they ran: each figure's after/before ratio with a confidence bound.

A bench figure on a shared machine drifts by more than the change one wants to see (the same checkout's runs
spread by 20 %), so one run a side proves nothing. Run the two checkouts alternately, N times each, with the
same options; pair the i-th run of one with the i-th of the other; and decide on the geometric mean of the
paired ratios with a Student-t interval over their logarithms: a regression beyond `limit` is claimed only
when the whole interval is past it, "within" only when the whole interval is inside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError
from scipy import stats as scipy_stats

from arena.errors import UsageError
from runtime_bench.model import BenchReport, LevelResult

__all__ = ["FIGURES", "Comparison", "Figure", "compare", "load_reports", "render"]

Better = Literal["lower", "higher"]
Verdict = Literal["within", "regressed", "improved", "undecided"]


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
    """One figure of one configuration at one level across the pairs."""

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


def compare(
    before: Sequence[BenchReport], after: Sequence[BenchReport], limit: float = 0.10, confidence: float = 0.95
) -> list[Comparison]:
    """Every figure of every configuration and level both sides ran, `before[i]` paired with `after[i]`.

    Raises:
        UsageError: the sides differ in length or hold fewer than two runs each.
    """
    if len(before) != len(after):
        raise UsageError(f"an A/B pairs runs: {len(before)} before, {len(after)} after")
    if len(before) < 2:
        raise UsageError(f"an A/B needs at least two pairs of runs for an interval, got {len(before)}")
    out: list[Comparison] = []
    for config, level in _shared_levels(before, after):
        for figure in FIGURES:
            pairs = [(_read(b, config, level, figure), _read(a, config, level, figure)) for b, a in zip(before, after)]
            kept = [(b, a) for b, a in pairs if b and a and b > 0 and a > 0]
            if len(kept) < 2:
                continue
            logs = [math.log(a / b) for b, a in kept]
            out.append(_comparison(config, level, figure, kept, logs, limit, confidence))
    return out


def _comparison(
    config: str,
    level: int,
    figure: Figure,
    kept: list[tuple[float, float]],
    logs: list[float],
    limit: float,
    confidence: float,
) -> Comparison:
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    low, high = math.exp(mean - half), math.exp(mean + half)
    worse, better = (1 + limit, 1 / (1 + limit)) if figure.better == "lower" else (1 / (1 + limit), 1 + limit)
    return Comparison(
        config=config,
        level=level,
        figure=figure.name,
        before=[b for b, _ in kept],
        after=[a for _, a in kept],
        ratio=math.exp(mean),
        low=low,
        high=high,
        verdict=_verdict(low, high, worse, better, figure.better),
    )


def _verdict(low: float, high: float, worse: float, better: float, direction: Better) -> Verdict:
    if direction == "higher":  # mirror, so that "past `worse`" reads the same way
        low, high, worse, better = 1 / high, 1 / low, 1 / worse, 1 / better
    if low > worse:
        return "regressed"
    if high < better:
        return "improved"
    if high < worse:
        return "within"
    return "undecided"


def _shared_levels(before: Sequence[BenchReport], after: Sequence[BenchReport]) -> list[tuple[str, int]]:
    def keys(report: BenchReport) -> set[tuple[str, int]]:
        return {(config.label, level.level) for config in report.configs for level in config.levels}

    shared = set.intersection(*(keys(report) for report in [*before, *after]))
    return sorted(shared)


def _read(report: BenchReport, config: str, level: int, figure: Figure) -> float | None:
    for result in report.configs:
        if result.label == config:
            for found in result.levels:
                if found.level == level and not found.failures:
                    return figure.read(found)
    return None


def load_reports(folder: Path) -> list[BenchReport]:
    """Every bench report.json under `folder`, in the order the runs started.

    Raises:
        UsageError: the folder holds none, or one is not a bench report.
    """
    paths = sorted(folder.rglob("report.json")) if folder.is_dir() else []
    if not paths:
        raise UsageError(f"{folder}: no bench report.json under it (give the folder holding one run's folder per run)")
    reports = []
    for path in paths:
        try:
            reports.append(BenchReport.model_validate_json(path.read_text()))
        except (OSError, ValidationError) as exc:
            raise UsageError(f"{path} is not a readable bench report.json: {exc}") from None
    return sorted(reports, key=lambda report: report.meta.started or "")


def render(comparisons: Sequence[Comparison], limit: float, confidence: float) -> str:
    """A markdown table of the comparisons, then what the verdicts mean."""
    lines = [
        f"| configuration | c | figure | pairs | after ÷ before | {confidence:.0%} interval | verdict |",
        "| --- | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for c in comparisons:
        lines.append(
            f"| {c.config} | {c.level} | {c.figure} | {len(c.before)} | {c.ratio:.3f} | "
            f"[{c.low:.3f}, {c.high:.3f}] | {c.verdict} |"
        )
    lines.append("")
    lines.append(
        f"within: the whole interval is inside {limit:.0%} of before; regressed: the whole interval is worse by more; "
        "improved: the whole interval is better by more; undecided: more pairs are needed."
    )
    return "\n".join(lines)
