"""The learned shortcut's fixed query plan: what at most six charged queries reveal, never a trace id.

`all` (the gate's model) spends all six on timing: the reported endpoint's failures per minute
(its onset, rise and rate; no rise means "none"), a read of the reported edge's latest failed
requests of every endpoint (when each endpoint began failing, how often), and WARN+ lines per
service in four windows: the quiet quarter hour, then up to four minutes before the reported
endpoint's onset, the six minutes around it, and after (each service's onset, rise and lag behind
or ahead of its callers and dependencies). `counts_graph` is `all` without the edge read;
`names` reads 200 WARN+ lines of the last ten minutes and nothing else (who names whom).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from arena_kit.policy import CallTool
from fault_localisation.investigations import rose
from fault_localisation.observe import Context, change_minute, ts

__all__ = ["AROUND", "MAX_PLAN_QUERIES", "VARIANTS", "WINDOWS", "Observed", "observe"]

VARIANTS = ("all", "names", "counts_graph")
"""The gate's model (`all`) and its two ablations: names in lines only, counts and call graph only."""
MAX_PLAN_QUERIES = 6
"""Charged queries before deciding; one read of the chosen service follows (RULES.free_queries = 7)."""
AROUND = (timedelta(minutes=4), timedelta(minutes=2))
"""The window around the reported endpoint's onset: from 4 minutes before it to 2 after."""
WINDOWS = ("base", "before", "around", "after")
"""The count windows, in time order."""
SAMPLE_LIMIT = 200
NAMES_WINDOW = timedelta(minutes=10)
"""The names-only ablation reads WARN+ lines from this long before the window's end."""

Plan = Generator[CallTool, dict[str, Any], "Observed"]


@dataclass
class Observed:
    """Everything the plan's queries returned, as parsed tool results."""

    services: list[dict[str, Any]] = field(default_factory=list)
    edge: str | None = None
    """The reported edge."""
    endpoint: str = ""
    """The reported endpoint as its access lines start (`POST /api/v1/checkout/`)."""
    edge_series: dict[str, int] = field(default_factory=dict)
    """The reported endpoint's ERROR+ lines per minute on the reported edge."""
    onset: datetime | None = None
    """When the reported endpoint's failures began (the series' step), None on "none"."""
    edge_lines: list[str] = field(default_factory=list)
    """The reported edge's ERROR+ lines from the first quarter hour's end on (`all`)."""
    windows: dict[str, dict[str, int]] = field(default_factory=dict)
    """WARN+ lines per service in each of WINDOWS."""
    bounds: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    """Each window's [start, end)."""
    sample: list[str] = field(default_factory=list)
    """Up to SAMPLE_LIMIT WARN+ lines of the last ten minutes (`names`)."""
    none: bool = False
    """Users saw no failure: nothing to rank."""


def _counts(got: dict[str, Any]) -> dict[str, int]:
    counts = got.get("counts", {})
    return {str(k): int(v) for k, v in counts.items()} if isinstance(counts, dict) else {}


def series_onset(ctx: Context, series: dict[str, int]) -> datetime:
    """The first minute after the quiet quarter hour that opens five minutes of three or more
    failures (a sparse series' step), else the series' step by `change_minute`, else mid-window."""
    minutes = sorted((ts(k), n) for k, n in series.items() if ts(k) >= ctx.split and n > 0)
    for at, _ in minutes:
        if sum(n for t, n in minutes if at <= t < at + timedelta(minutes=5)) >= 3:
            return at
    return change_minute(series, ctx.start, ctx.end) or ctx.split + (ctx.end - ctx.split) / 2


def window_bounds(ctx: Context, onset: datetime) -> dict[str, tuple[datetime, datetime]]:
    """WINDOWS' bounds around the reported endpoint's onset, each at least a minute long."""
    around_start = min(max(ctx.split + timedelta(minutes=1), onset - AROUND[0]), ctx.end - timedelta(minutes=2))
    around_end = min(max(around_start + timedelta(minutes=1), onset + AROUND[1]), ctx.end - timedelta(minutes=1))
    return {
        "base": (ctx.start, ctx.split),
        "before": (ctx.split, around_start),
        "around": (around_start, around_end),
        "after": (around_end, ctx.end),
    }


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
    reported = ctx.reported
    if reported is None:
        raise ValueError("the prompt names no reported endpoint")
    seen.edge, seen.endpoint = reported.edge, f"{reported.method} {reported.path}/"
    seen.edge_series = _counts(
        (yield ctx.count("minute", service=reported.edge, min_level="ERROR", text=reported.text))
    )
    if not rose(ctx, seen.edge_series):
        seen.none = True
        return seen
    seen.onset = series_onset(ctx, seen.edge_series)
    if variant == "all":
        got = yield ctx.search(start=ctx.split, limit=SAMPLE_LIMIT, service=reported.edge, min_level="ERROR")
        seen.edge_lines = [str(line) for line in got.get("lines", [])]
    seen.bounds = window_bounds(ctx, seen.onset)
    for name, (start, end) in seen.bounds.items():
        seen.windows[name] = _counts((yield ctx.count("service", start=start, end=end, min_level="WARN")))
    return seen
