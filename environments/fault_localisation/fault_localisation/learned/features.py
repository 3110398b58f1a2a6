"""Per-candidate features of what the plan observed: counts and rises per window, each service's
onset and lag against its callers and dependencies, the call graph and chain shapes, the reported
endpoint's timing against every other endpoint's, and names in lines."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta
from statistics import median

from fault_localisation.learned.name_features import name_features
from fault_localisation.learned.plan import WINDOWS, Observed
from fault_localisation.observe import Context, line_fields, rate_z, reachable, ts

__all__ = ["GROUPS", "ROLES", "VARIANT_GROUPS", "feature_names", "features"]

ROLES = ("edge", "service", "worker", "database", "cache", "queue", "search")
GROUPS = ("c", "t", "g", "s", "e", "p", "n", "ng", "w")
"""Feature groups, the prefix of each name: c counts per window, t each service's onset and lags,
g call graph, s chain shapes (risen services and paths), e the reported endpoint's own timing,
p the reported endpoint against every other failing endpoint, n names in lines, ng names against
the call graph, w wording."""
VARIANT_GROUPS = {
    "all": ("c", "t", "g", "s", "e", "p"),
    "names": ("n", "ng", "w"),
    "counts_graph": ("c", "t", "g", "s", "e"),
}
_FAR = 9.0
"""Distance or depth for a service not reached."""
_RISE_Z = 3.5
_MINUTE = timedelta(minutes=1)


def _log(x: float) -> float:
    return math.copysign(math.log1p(abs(x)), x)


def _distances(sources: set[str], edges: dict[str, set[str]]) -> dict[str, int]:
    dist = {s: 0 for s in sources}
    frontier = sorted(sources)
    while frontier:
        nxt = []
        for name in frontier:
            for dep in sorted(edges.get(name, ())):
                if dep not in dist:
                    dist[dep] = dist[name] + 1
                    nxt.append(dep)
        frontier = nxt
    return dist


def _minutes(a: datetime, b: datetime) -> float:
    return (a - b) / _MINUTE


def endpoint_onsets(lines: list[str], edge: str | None) -> dict[str, tuple[datetime, int]]:
    """Each endpoint's first failed request on the edge in `lines`, and how many failed."""
    seen: dict[str, tuple[datetime, int]] = {}
    for line in lines:
        fields = line_fields(line)
        if fields is None or fields[2] != edge:
            continue
        words = fields[4].split(" ")
        if len(words) != 4 or not words[2].isdigit() or not words[2].startswith("5"):
            continue
        endpoint = f"{words[0]} {words[1].rsplit('/', 1)[0]}/"
        first, n = seen.get(endpoint, (ts(fields[0]), 0))
        seen[endpoint] = (first, n + 1)
    return seen


def _edge_rows(ctx: Context, seen: Observed) -> dict[str, float]:
    """The incident's `e` and `p` features (the same for every candidate)."""
    f: dict[str, float] = {}
    onset = seen.onset or ctx.split
    series = {ts(k): n for k, n in seen.edge_series.items()}
    late = [n for t, n in series.items() if t >= onset]
    peak = max(late, default=0)
    half = min((t for t, n in series.items() if t >= onset and 2 * n >= peak), default=onset)
    f["e_onset_min"] = _minutes(onset, ctx.start)
    f["e_rise_min"] = _minutes(half, onset)
    f["e_rate"] = sum(late) / max(1.0, _minutes(ctx.end, onset))
    f["e_peak"] = float(peak)
    ends = endpoint_onsets(seen.edge_lines, seen.edge)
    firsts = sorted(t for t, n in ends.values() if n >= 3)
    mine = ends.get(seen.endpoint, (onset, 0))[0]
    f["p_endpoints"] = float(len(firsts))
    f["p_rank"] = sum(t < mine for t in firsts) / max(1, len(firsts))
    f["p_after_first"] = _minutes(mine, firsts[0]) if firsts else 0.0
    f["p_before_last"] = _minutes(firsts[-1], mine) if firsts else 0.0
    f["p_from_median"] = median(_minutes(mine, t) for t in firsts) if firsts else 0.0
    return f


def features(ctx: Context, seen: Observed) -> dict[str, dict[str, float]]:
    """Every feature (all groups) of every service listed, by service then feature name."""
    names = sorted(str(s.get("name")) for s in seen.services)
    roles = {str(s.get("name")): str(s.get("role")) for s in seen.services}
    calls = {str(s.get("name")): {str(c) for c in s.get("calls", [])} for s in seen.services}
    callers: dict[str, set[str]] = defaultdict(set)
    for name, deps in calls.items():
        for dep in deps:
            callers[dep].add(name)
    edges = {n for n in names if roles[n] == "edge"}
    depth = _distances(edges, calls)
    focus = seen.edge
    focus_dist = _distances({focus}, calls) if focus else {}
    ancestors = {n: reachable(callers, n) for n in names}
    below = {n: reachable(calls, n) for n in names}
    under_focus = reachable(calls, focus) if focus else set()

    lengths = {w: max(1.0, _minutes(*reversed(seen.bounds[w]))) if w in seen.bounds else 1.0 for w in WINDOWS}
    counts = {w: seen.windows.get(w, {}) for w in WINDOWS}
    base = counts["base"]
    z = {
        w: {n: rate_z(base.get(n, 0), counts[w].get(n, 0), lengths[w] / lengths["base"]) for n in names}
        for w in WINDOWS[1:]
    }
    later = WINDOWS[1:]
    first = {n: next((i for i, w in enumerate(later) if z[w][n] > _RISE_Z), len(later)) for n in names}
    risen = {n for n in names if first[n] < len(later)}
    roots = {n for n in risen & under_focus if not calls[n] & risen}
    # How far each service lies below the focus edge along risen services only.
    risen_dist = _distances({focus}, {k: v & risen for k, v in calls.items()}) if focus else {}
    edge_row = _edge_rows(ctx, seen)
    named = name_features(names, seen.sample, callers, calls, ancestors, focus)

    rows: dict[str, dict[str, float]] = {}
    for n in names:
        f: dict[str, float] = {}
        f["c_base"] = _log(base.get(n, 0))
        for w in later:
            f[f"c_{w}"] = _log(counts[w].get(n, 0))
            f[f"c_{w}_z"] = z[w][n]
            f[f"c_{w}_ratio"] = _log((counts[w].get(n, 0) / lengths[w]) / (base.get(n, 0) / lengths["base"] + 0.1))
        f["c_risen"] = float(n in risen)
        f["c_root_like"] = float(n in roots)
        cf = [first[c] for c in callers[n]]
        df = [first[d] for d in calls[n]]
        f["t_first"] = float(first[n])
        f["t_lag_callers"] = first[n] - min(cf, default=len(later))
        f["t_lead_deps"] = min(df, default=len(later)) - first[n]
        f["t_around_share"] = counts["around"].get(n, 0) / (counts["after"].get(n, 0) + counts["around"].get(n, 0) + 1)
        f["t_before_share"] = counts["before"].get(n, 0) / (sum(counts[w].get(n, 0) for w in later) + 1)
        f["t_jump_around"] = z["around"][n] - z["before"][n]
        for role in ROLES:
            f[f"g_role_{role}"] = float(roles[n] == role)
        f["g_depth"] = float(depth.get(n, _FAR))
        f["g_callers"] = float(len(callers[n]))
        f["g_deps"] = float(len(calls[n]))
        f["g_ancestors"] = float(len(ancestors[n]))
        f["g_below"] = float(len(below[n]))
        f["g_is_focus"] = float(n == focus)
        f["g_under_focus"] = float(n in under_focus)
        f["g_focus_dist"] = float(focus_dist.get(n, _FAR))
        f["s_risen_dist"] = float(risen_dist.get(n, _FAR))
        f["s_callers_risen"] = float(len(callers[n] & risen))
        f["s_deps_risen"] = float(len(calls[n] & risen))
        f["s_ancestors_risen"] = float(len(ancestors[n] & risen))
        f["s_below_risen"] = float(len(below[n] & risen))
        f["s_roots"] = float(len(roots))
        f["s_risen"] = float(len(risen))
        f["s_max_caller_z"] = max((z["after"][c] for c in callers[n]), default=0.0)
        f["s_chain_first"] = float(min((first[a] for a in ancestors[n] & risen), default=len(later)))
        f.update(edge_row)
        f.update(named[n])
        rows[n] = f
    return rows


def feature_names(variant: str) -> list[str]:
    """The features a variant's model reads, in model order."""
    groups = VARIANT_GROUPS[variant]
    probe = features(
        Context(ts("2024-01-01T00:00:00Z"), ts("2024-01-01T01:00:00Z")),
        Observed(services=[{"name": "a", "role": "edge", "calls": []}]),
    )["a"]
    return [k for k in probe if k.split("_", 1)[0] in groups]
