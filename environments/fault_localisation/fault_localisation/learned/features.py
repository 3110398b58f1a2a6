"""Per-candidate features of what the plan observed: counts, timing, call graph, names in lines, wording."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from datetime import timedelta

from fault_localisation.investigations import reachable
from fault_localisation.learned.plan import NEAR, PRE, Observed
from fault_localisation.observe import BASELINE, KIND_EVIDENCE, Context, anomalous, line_fields, rate_z, ts

__all__ = ["GROUPS", "ROLES", "VARIANT_GROUPS", "feature_names", "features"]

ROLES = ("edge", "service", "worker", "database", "cache", "queue", "search")
GROUPS = ("c", "t", "g", "n", "ng", "w")
"""Feature groups, the prefix of each name: c counts, t timing (windows around the users' failure),
g call graph (with neighbours' rises), n names in lines, ng names against the call graph, w wording."""
VARIANT_GROUPS = {"all": GROUPS, "names": ("n",), "counts_graph": ("c", "t", "g")}
_FAR = 9.0
"""Distance or depth for a service not reached."""
_HIGH = ("ERROR", "FATAL")


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


def _name_pattern(names: list[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return re.compile(rf"(?<![A-Za-z0-9_-])({alternatives})(?![A-Za-z0-9_-])")


def _rate(count: int, minutes: float) -> float:
    return count / max(minutes, 1e-9)


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

    ratio = ctx.ratio
    wb, wa, ea = seen.warn_before, seen.warn_after, seen.error_after
    z = {n: rate_z(wb.get(n, 0), wa.get(n, 0), ratio) for n in names}
    risen = {n for n in names if anomalous(wb.get(n, 0), wa.get(n, 0), ratio)}
    excess = {n: wa.get(n, 0) - ratio * wb.get(n, 0) for n in names}
    positive = sum(max(0.0, e) for e in excess.values()) or 1.0
    order = sorted(names, key=lambda n: (-excess[n], n))
    err_order = sorted(names, key=lambda n: (-ea.get(n, 0), n))
    base_min = BASELINE / timedelta(minutes=1)
    pre_min = PRE / timedelta(minutes=1) - 1
    near_min = NEAR / timedelta(minutes=1) + 1
    pre_z = {n: rate_z(wb.get(n, 0), seen.pre.get(n, 0), pre_min / base_min) for n in names}
    near_z = {n: rate_z(wb.get(n, 0), seen.near.get(n, 0), near_min / base_min) for n in names}
    pre_risen = {n for n in names if pre_z[n] > 3.5}
    onset_min = 0.0 if seen.onset is None else (seen.onset - ctx.start) / timedelta(minutes=1)

    # Risen path from the focus edge down to each service (every service on it risen).
    risen_path: set[str] = set()
    if focus in risen:
        todo = [focus]
        risen_path.add(focus)
        while todo:
            for dep in calls.get(todo.pop(), ()):
                if dep in risen and dep not in risen_path:
                    risen_path.add(dep)
                    todo.append(dep)

    # Names in the sample: who writes, at what level, and whom each line names.
    pattern = _name_pattern(names)
    named: dict[str, Counter[str]] = {n: Counter() for n in names}  # by level bucket
    namers: dict[str, Counter[str]] = {n: Counter() for n in names}  # who names n, how often
    names_others: Counter[str] = Counter()
    own: dict[str, Counter[str]] = {n: Counter() for n in names}
    kind_lines: Counter[str] = Counter()
    kinds_of: dict[str, set[str]] = defaultdict(set)
    named_kind: Counter[str] = Counter()
    first_named: dict[str, float] = {}
    first_own: dict[str, float] = {}
    t0 = None
    parsed = [f for f in (line_fields(line) for line in seen.sample) if f is not None]
    for stamp, level, writer, _trace, message in parsed:
        when = ts(stamp)
        t0 = t0 or when
        offset = (when - t0).total_seconds()
        bucket = "error" if level in _HIGH else "warn"
        kind = next((k for k, p in KIND_EVIDENCE if p.search(message)), None)
        if writer in own:
            own[writer][bucket] += 1
            first_own.setdefault(writer, offset)
            if kind is not None:
                kind_lines[writer] += 1
                kinds_of[writer].add(kind)
        mentioned = {m for m in (pattern.findall(message) if pattern else []) if m != writer}
        if mentioned and writer in own:
            names_others[writer] += 1
        for m in mentioned:
            named[m][bucket] += 1
            namers[m][writer] += 1
            first_named.setdefault(m, offset)
            if kind is not None:
                named_kind[m] += 1
    sample_n = max(1, len(parsed))
    named_total = {n: named[n]["warn"] + named[n]["error"] for n in names}
    named_sum = sum(named_total.values()) or 1
    named_order = sorted(names, key=lambda n: (-named_total[n], n))
    is_named = {n for n in names if named_total[n] > 0}

    rows: dict[str, dict[str, float]] = {}
    n_services = max(1, len(names))
    for n in names:
        f: dict[str, float] = {}
        # c: counts by level and window
        f["c_warn_before"] = _log(wb.get(n, 0))
        f["c_warn_after"] = _log(wa.get(n, 0))
        f["c_error_after"] = _log(ea.get(n, 0))
        f["c_rise_z"] = z[n]
        f["c_excess"] = _log(excess[n])
        f["c_excess_share"] = excess[n] / positive
        f["c_excess_rank"] = order.index(n) / n_services
        f["c_error_rank"] = err_order.index(n) / n_services
        f["c_risen"] = float(n in risen)
        f["c_error_frac"] = ea.get(n, 0) / (wa.get(n, 0) + 1)
        f["c_rise_ratio"] = _log((wa.get(n, 0) / ratio + 1) / (wb.get(n, 0) + 1))
        f["c_onset_minute"] = onset_min
        f["c_risen_services"] = float(len(risen))
        # t: timing around the users' failure
        f["t_pre"] = _log(seen.pre.get(n, 0))
        f["t_pre_z"] = pre_z[n]
        f["t_pre_rate_ratio"] = _log(_rate(seen.pre.get(n, 0), pre_min) / (_rate(wb.get(n, 0), base_min) + 0.1))
        f["t_near"] = _log(seen.near.get(n, 0))
        f["t_near_z"] = near_z[n]
        f["t_pre_share_of_after"] = seen.pre.get(n, 0) / (wa.get(n, 0) + 1)
        # g: call graph and neighbours' rises
        for role in ROLES:
            f[f"g_role_{role}"] = float(roles[n] == role)
        f["g_depth"] = float(depth.get(n, _FAR))
        f["g_callers"] = float(len(callers[n]))
        f["g_deps"] = float(len(calls[n]))
        f["g_ancestors"] = float(len(ancestors[n]))
        f["g_below"] = float(len(below[n]))
        f["g_reaches_edge"] = float(bool(ancestors[n] & edges) or n in edges)
        f["g_is_focus"] = float(n == focus)
        f["g_reaches_focus"] = float(focus is not None and (focus in ancestors[n] or n == focus))
        f["g_focus_dist"] = float(focus_dist.get(n, _FAR))
        cr = callers[n] & risen
        dr = calls[n] & risen
        f["g_callers_risen"] = float(len(cr))
        f["g_callers_risen_frac"] = len(cr) / len(callers[n]) if callers[n] else 0.0
        f["g_deps_risen"] = float(len(dr))
        f["g_deps_risen_frac"] = len(dr) / len(calls[n]) if calls[n] else 0.0
        f["g_max_caller_z"] = max((z[c] for c in callers[n]), default=0.0)
        f["g_max_dep_z"] = max((z[d] for d in calls[n]), default=0.0)
        f["g_below_risen"] = float(len(below[n] & risen))
        f["g_ancestors_risen_frac"] = len(ancestors[n] & risen) / len(ancestors[n]) if ancestors[n] else 0.0
        f["g_risen_path_focus"] = float(n in risen_path)
        f["g_callers_pre_risen"] = float(len(callers[n] & pre_risen))
        f["g_deps_pre_risen"] = float(len(calls[n] & pre_risen))
        f["g_z_over_deps"] = z[n] - f["g_max_dep_z"]
        f["g_excess_over_callers"] = _log(excess[n] - max((excess[c] for c in callers[n]), default=0.0))
        # n: names in lines
        f["n_named_warn"] = _log(named[n]["warn"])
        f["n_named_error"] = _log(named[n]["error"])
        f["n_named_share"] = named_total[n] / named_sum
        f["n_named_rank"] = named_order.index(n) / n_services if named_total[n] else 1.0
        f["n_namers"] = float(len(namers[n]))
        f["n_namers_named"] = float(sum(1 for w in namers[n] if w in is_named))
        f["n_names_others"] = _log(names_others[n])
        f["n_own_warn"] = _log(own[n]["warn"])
        f["n_own_error"] = _log(own[n]["error"])
        f["n_own_share"] = (own[n]["warn"] + own[n]["error"]) / sample_n
        f["n_first_named"] = first_named.get(n, 3600.0)
        f["n_first_own"] = first_own.get(n, 3600.0)
        f["n_names_named_frac"] = names_others[n] / (own[n]["warn"] + own[n]["error"] + 1)
        # ng: names against the call graph
        f["ng_named_by_callers"] = len(set(namers[n]) & callers[n]) / len(callers[n]) if callers[n] else 0.0
        f["ng_named_by_noncallers"] = float(len(set(namers[n]) - callers[n]))
        f["ng_deps_named"] = float(len(calls[n] & is_named))
        f["ng_callers_named"] = float(len(callers[n] & is_named))
        f["ng_named_on_focus_side"] = float(bool(set(namers[n]) & (ancestors[n] | {focus})))
        # w: fault-kind wording
        f["w_kind_lines"] = _log(kind_lines[n])
        f["w_kind_frac"] = kind_lines[n] / (own[n]["warn"] + own[n]["error"] + 1)
        f["w_kinds"] = float(len(kinds_of[n]))
        f["w_named_kind"] = _log(named_kind[n])
        rows[n] = f
    return rows


def feature_names(variant: str) -> list[str]:
    """The features a variant's model reads, in model order."""
    groups = VARIANT_GROUPS[variant]
    probe = features(Context(ts("2024-01-01T00:00:00Z"), ts("2024-01-01T01:00:00Z")),
                     Observed(services=[{"name": "a", "role": "edge", "calls": []}]))["a"]
    return [k for k in probe if k.split("_", 1)[0] in groups]
