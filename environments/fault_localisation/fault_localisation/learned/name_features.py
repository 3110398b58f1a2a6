"""Per-candidate features of names in a sample of lines: who names whom, at what level, in a fault kind's words."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from fault_localisation.observe import KIND_EVIDENCE, line_fields, ts

__all__ = ["name_features"]

_HIGH = ("ERROR", "FATAL")


def _log(x: float) -> float:
    return math.copysign(math.log1p(abs(x)), x)


def _name_pattern(names: list[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return re.compile(rf"(?<![A-Za-z0-9_-])({alternatives})(?![A-Za-z0-9_-])")


def name_features(
    names: list[str],
    sample: list[str],
    callers: dict[str, set[str]],
    calls: dict[str, set[str]],
    ancestors: dict[str, set[str]],
    focus: str | None,
) -> dict[str, dict[str, float]]:
    """The `n`, `ng` and `w` features of each service in `names` from the lines of `sample`."""
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
    parsed = [f for f in (line_fields(line) for line in sample) if f is not None]
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
    n_services = max(1, len(names))
    rows: dict[str, dict[str, float]] = {}
    for n in names:
        f: dict[str, float] = {}
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
        f["ng_named_on_focus_side"] = float(bool(set(namers[n]) & (ancestors[n] | ({focus} if focus else set()))))
        # w: fault-kind wording
        f["w_kind_lines"] = _log(kind_lines[n])
        f["w_kind_frac"] = kind_lines[n] / (own[n]["warn"] + own[n]["error"] + 1)
        f["w_kinds"] = float(len(kinds_of[n]))
        f["w_named_kind"] = _log(named_kind[n])
        rows[n] = f
    return rows
