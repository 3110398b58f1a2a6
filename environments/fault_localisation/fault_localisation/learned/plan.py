"""The learned shortcut's fixed query plan: what at most six charged queries reveal, never a trace id."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from arena_kit.policy import CallTool
from fault_localisation.observe import Context, anomalous, change_minute, ts

__all__ = ["MAX_PLAN_QUERIES", "VARIANTS", "Observed", "observe"]

VARIANTS = ("all", "names", "counts_graph")
"""The gate's model (`all`) and its two ablations: names in lines only, counts and call graph only."""
MAX_PLAN_QUERIES = 6
"""Charged queries before deciding; one read of the chosen service follows (RULES.free_queries = 7)."""
PRE = timedelta(minutes=10)
"""The window before the users' failure began in which early risers show."""
NEAR = timedelta(minutes=4)
SAMPLE_LIMIT = 200
NAMES_WINDOW = timedelta(minutes=10)
"""The names-only ablation reads WARN+ lines from this long before the window's end."""

Plan = Generator[CallTool, dict[str, Any], "Observed"]


@dataclass
class Observed:
    """Everything the plan's queries returned, as parsed tool results."""

    services: list[dict[str, Any]] = field(default_factory=list)
    warn_before: dict[str, int] = field(default_factory=dict)
    warn_after: dict[str, int] = field(default_factory=dict)
    error_after: dict[str, int] = field(default_factory=dict)
    edge: str | None = None
    """The reported edge, whose failure is dated."""
    edge_series: dict[str, int] = field(default_factory=dict)
    """That edge's ERROR+ lines per minute about the reported endpoint."""
    onset: datetime | None = None
    """When the users' failure began (the edge series' step), or None before it is dated."""
    pre: dict[str, int] = field(default_factory=dict)
    """WARN+ lines per service in [onset - PRE, onset - 1 min)."""
    near: dict[str, int] = field(default_factory=dict)
    """WARN+ lines per service in [onset - 1 min, onset + NEAR) (counts_graph only)."""
    sample: list[str] = field(default_factory=list)
    """Up to SAMPLE_LIMIT WARN+ lines from the onset on (not counts_graph)."""
    none: bool = False
    """Users saw no failure: nothing to rank."""


def _counts(got: dict[str, Any]) -> dict[str, int]:
    counts = got.get("counts", {})
    return {str(k): int(v) for k, v in counts.items()} if isinstance(counts, dict) else {}


def _series_onset(ctx: Context, series: dict[str, int]) -> datetime:
    """The minute the series steps up, else its first minute at half its peak after the quiet quarter hour."""
    at = change_minute(series, ctx.start, ctx.end)
    if at is not None:
        return at
    late = {ts(k): n for k, n in series.items() if ts(k) >= ctx.split}
    if not late:
        return ctx.split + (ctx.end - ctx.split) / 2
    peak = max(late.values())
    return min(t for t, n in late.items() if 2 * n >= peak)


def _window(ctx: Context, start: datetime, end: datetime) -> tuple[datetime, datetime]:
    start, end = max(ctx.start, start), min(ctx.end, end)
    if end <= start:
        start, end = (end - timedelta(minutes=1), end) if end > ctx.start else (ctx.start, ctx.start + timedelta(minutes=1))
    return start, end


def observe(ctx: Context, variant: str = "all") -> Plan:
    """Run the plan for `variant`; returns what it saw (`none` once users plainly saw nothing)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    seen = Observed()
    seen.services = list((yield CallTool("list_services", {})).get("services", []))
    if variant == "names":  # names in lines alone: no count, so no "none" either
        got = yield ctx.search(start=ctx.end - NAMES_WINDOW, limit=SAMPLE_LIMIT, min_level="WARN")
        seen.sample = [str(line) for line in got.get("lines", [])]
        return seen
    seen.warn_before = _counts((yield ctx.count("service", end=ctx.split, min_level="WARN")))
    seen.warn_after = _counts((yield ctx.count("service", start=ctx.split, min_level="WARN")))
    reported = ctx.reported
    if reported is None:
        raise ValueError("the prompt names no reported endpoint")
    seen.edge = reported.edge
    seen.edge_series = _counts((yield ctx.count("minute", service=reported.edge, min_level="ERROR",
                                                text=reported.text)))
    before = sum(n for k, n in seen.edge_series.items() if ts(k) < ctx.split)
    if not anomalous(before, sum(seen.edge_series.values()) - before, ctx.ratio):
        seen.none = True
        return seen
    onset = seen.onset = _series_onset(ctx, seen.edge_series)
    seen.error_after = _counts((yield ctx.count("service", start=ctx.split, min_level="ERROR")))
    start, end = _window(ctx, onset - PRE, onset - timedelta(minutes=1))
    seen.pre = _counts((yield ctx.count("service", start=start, end=end, min_level="WARN")))
    if variant == "counts_graph":
        start, end = _window(ctx, onset - timedelta(minutes=1), onset + NEAR)
        seen.near = _counts((yield ctx.count("service", start=start, end=end, min_level="WARN")))
    else:
        start, _ = _window(ctx, onset, ctx.end)
        got = yield ctx.search(start=start, limit=SAMPLE_LIMIT, min_level="WARN")
        seen.sample = [str(line) for line in got.get("lines", [])]
    return seen
