"""Honest investigations that follow no request (`investigate_*`): what a careful engineer gets by
following names and rates instead of a failed request's trace, and so reports without evidence.
The gate reports them beside the oracle, the engineers' investigations (`engineers`) and the
shortcuts, so each difficulty tier shows what it separates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

from arena_kit.policy import CallTool, Policy
from fault_localisation.engineers import ENGINEERS
from fault_localisation.observe import (
    Context,
    Reported,
    anomalous,
    classify,
    line_fields,
    reachable,
    scripted,
    submit,
    ts,
)

__all__ = ["INVESTIGATIONS", "reported_rise", "rose"]

Run = Generator[CallTool, dict[str, Any], CallTool]
_READS = 4
"""Services a name-follower reads before it settles."""


def reported_rise(ctx: Context) -> Generator[CallTool, dict[str, Any], bool]:
    """The first query of the oracle and of every investigation here: did the reported endpoint's
    errors rise after the first quarter hour?"""
    report = ctx.reported
    if report is None:
        raise ValueError("the prompt names no reported endpoint")
    series = (yield ctx.count("minute", service=report.edge, min_level="ERROR", text=report.text)).get("counts", {})
    return rose(ctx, series)


def rose(ctx: Context, series: dict[str, int]) -> bool:
    """Whether a sparse per-minute count rose: in the window's last quarter hour at least 5, and
    more than twice the first quarter hour's (plus one, so a quiet start of 0 is not a rate of 0)."""
    before = sum(n for minute, n in series.items() if ts(minute) < ctx.split)
    late = sum(n for minute, n in series.items() if ts(minute) >= ctx.end - (ctx.split - ctx.start))
    return late >= 5 and late > 2 * (before + 1)


def _opening(ctx: Context) -> Generator[CallTool, dict[str, Any], tuple[dict[str, set[str]], Reported] | None]:
    """The call graph and the report, or None when the reported endpoint's errors did not rise."""
    listing = yield CallTool("list_services", {})
    calls = {s["name"]: set(s.get("calls", [])) for s in listing.get("services", [])}
    if not (yield from reported_rise(ctx)):
        return None
    assert ctx.reported is not None
    return calls, ctx.reported


def _risen(ctx: Context) -> Generator[CallTool, dict[str, Any], tuple[set[str], dict[str, float]]]:
    before = (yield ctx.count("service", end=ctx.split, min_level="WARN")).get("counts", {})
    after = (yield ctx.count("service", start=ctx.split, min_level="WARN")).get("counts", {})
    names = set(before) | set(after)
    excess = {s: after.get(s, 0) - ctx.ratio * before.get(s, 0) for s in names}
    return {s for s in names if anomalous(before.get(s, 0), after.get(s, 0), ctx.ratio)}, excess


def follow_names(ctx: Context) -> Run:
    """Down from the reported edge without traces: its risen dependency with the largest rise
    (the edge's access log names none), then, at each service, the risen dependency its own
    warnings and errors name most; the service whose lines name no risen dependency is the root."""
    opened = yield from _opening(ctx)
    if opened is None:
        return submit("none")
    calls, report = opened
    risen, excess = yield from _risen(ctx)
    below = sorted(calls.get(report.edge, set()) & risen, key=lambda s: (-excess[s], s))
    if not below:
        return submit("none")
    current, lines = below[0], []
    for _ in range(_READS):
        got = yield ctx.search(start=ctx.split, limit=200, service=current, min_level="WARN")
        lines = got.get("lines", [])
        named: Counter[str] = Counter()
        for line in lines:
            fields = line_fields(line)
            if fields is not None:
                named.update(dep for dep in calls.get(current, set()) & risen if dep in fields[4])
        if not named:
            break
        current = max(sorted(named), key=lambda s: named[s])
    return submit(current, classify(lines) or "bad_deploy")


def rates_and_graph(ctx: Context) -> Run:
    """Rates and the call graph alone (the oracle's fallback without traces): below the reported
    edge, the risen service none of whose dependencies rose, with the largest rise."""
    opened = yield from _opening(ctx)
    if opened is None:
        return submit("none")
    calls, report = opened
    risen, excess = yield from _risen(ctx)
    sources = sorted(
        (s for s in reachable(calls, report.edge) & risen if not calls.get(s, set()) & risen),
        key=lambda s: (-excess[s], s),
    )
    if not sources:
        return submit("none")
    got = yield ctx.search(start=ctx.split, limit=200, service=sources[0], min_level="WARN")
    return submit(sources[0], classify(got.get("lines", [])) or "bad_deploy")


INVESTIGATIONS: dict[str, Policy] = {
    **ENGINEERS,
    "investigate_names": scripted(follow_names),
    "investigate_rates_and_graph": scripted(rates_and_graph),
}
