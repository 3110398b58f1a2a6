"""Scripted fault-localisation policies: pure functions of the observation (the prompt and their own
tool results), never of the label or the generator.

The oracle investigates as an engineer would: compare each service's WARN+ volume before and
after the first quarter hour, keep the anomalous services none of whose dependencies are
anomalous (the failure is deepest there), date each one's change point from its per-minute
counts, then read the earliest one's lines around that point to name the kind and the onset.
It needs 2 queries on a quiet system and usually 4 otherwise (at most 7). Tool results may
arrive wrapped in harness text, so each is read as the first JSON object in it; a result without
one is an error.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta

from arena.policies import ScriptedPolicy
from arena.policy import Action, Answer, CallTool, Observation, Policy, RunShell, Step

__all__ = ["CHEATERS", "KIND_EVIDENCE", "POLICIES", "exhaustive", "impatient", "oracle", "spammer"]

_WINDOW = re.compile(r"between (\S+) and (\S+) \(UTC\)")
_BASELINE = timedelta(minutes=15)
KIND_EVIDENCE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern)) for kind, pattern in (
        ("connection_pool_exhaustion", r"connection from pool|connection pool \S+ saturated|no free connections"),
        ("bad_deploy", r"unhandled exception|NullPointerException"),
        ("oom_restart_loop", r"OOMKilled|restarting failed container|heap usage"),
        ("certificate_expiry", r"certificate|TLS handshake"),
        ("disk_full", r"No space left on device|filesystem \S+ is \d+% used"),
        ("dns_failure", r"no such host|name resolution"),
        ("config_error", r"invalid configuration|misconfigured"),
        ("rate_limited", r"429 Too Many Requests|quota exceeded"),
        ("cache_stampede", r"hot key|miss ratio|output buffer overflow"),
        ("clock_skew", r"clock offset|NTP"),
    )
)
"""Wording that betrays each fault kind in the failing service's own WARN+ lines."""


def first_json(text: str | None) -> dict | None:
    """The first JSON object embedded in `text`, or None (an error result, or no result yet)."""
    decoder = json.JSONDecoder()
    at = (text or "").find("{")
    while at != -1:
        try:
            value, _ = decoder.raw_decode(text or "", at)
        except ValueError:
            at = (text or "").find("{", at + 1)
            continue
        return value if isinstance(value, dict) else None
    return None


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _window(obs: Observation) -> tuple[datetime, datetime]:
    match = _WINDOW.search(obs.prompt)
    if match is None:
        raise ValueError("the prompt names no incident window")
    return _ts(match.group(1)), _ts(match.group(2))


def _submitted(obs: Observation) -> bool:
    return any(step.tool_is("submit_root_cause") for step in obs.steps)


def _submit(service: str, kind: str = "none", onset: str = "") -> CallTool:
    return CallTool("submit_root_cause", {"service": service, "fault_kind": kind, "onset": onset})


def _budget_left(steps: tuple[Step, ...]) -> int | None:
    """Remaining queries per the latest result that reported them (None before any did)."""
    for step in reversed(steps):
        if step.result and "budget spent" in step.result:
            return 0
        budget = (first_json(step.result) or {}).get("budget")
        if isinstance(budget, dict) and "remaining" in budget:
            return int(budget["remaining"])
    return None


def _rate_z(before: int, after: int, ratio: float) -> float:
    """How far `after` exceeds the share a steady rate would give it (binomial z-score), where
    the after-period is `ratio` times as long as the before-period."""
    n, p = before + after, ratio / (1 + ratio)
    return 0.0 if n == 0 else (after - n * p) / math.sqrt(n * p * (1 - p))


def _anomalous(before: int, after: int, ratio: float) -> bool:
    return _rate_z(before, after, ratio) > 3.5 and after > 1.3 * ratio * before


def _change_minute(counts: dict[str, int], start: datetime, end: datetime) -> datetime | None:
    """The minute a service's WARN+ rate steps up for good (the split maximising the excess over
    the midpoint of early and late rates), or None when no significant step exists."""
    minutes = int((end - start) / timedelta(minutes=1))
    series = [0] * minutes
    for key, n in counts.items():
        index = int((_ts(key) - start) / timedelta(minutes=1))
        if 0 <= index < minutes:
            series[index] = n
    base_n = int(_BASELINE / timedelta(minutes=1))
    base = sum(series[:base_n]) / base_n
    late = sum(series[-10:]) / 10
    if late <= base:
        return None
    mid = (base + late) / 2
    best, best_at, running = 0.0, 0, 0.0
    for index in range(minutes - 1, base_n - 1, -1):
        running += series[index] - mid
        if running > best:
            best, best_at = running, index
    after = sum(series[best_at:])
    if best_at == 0 or _rate_z(sum(series) - after, after, (minutes - best_at) / best_at) < 4:
        return None
    return start + timedelta(minutes=best_at)


def _reaches(calls: dict[str, set[str]], source: str, targets: set[str]) -> bool:
    """Whether `source` calls any of `targets`, directly or through other services."""
    seen, todo = {source}, list(calls.get(source, ()))
    while todo:
        name = todo.pop()
        if name in targets:
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return False


def _classify(lines: list[str]) -> tuple[str | None, str | None]:
    """The kind most lines' wording points to, and the first such line's timestamp."""
    hits: dict[str, list[str]] = {}
    for line in lines:
        parts = line.split(" ", 5)
        if len(parts) < 6:
            continue
        for kind, pattern in KIND_EVIDENCE:
            if pattern.search(parts[5]):
                hits.setdefault(kind, []).append(parts[0])
                break
    if not hits:
        return None, None
    kind = max(hits, key=lambda k: len(hits[k]))
    return kind, hits[kind][0]


def _investigate(obs: Observation, steps: tuple[Step, ...]) -> CallTool:
    """The oracle's next call: a query, or (once it knows) the submission."""
    start, end = _window(obs)
    split = start + _BASELINE
    results = [first_json(step.result) or {} for step in steps]
    plan: list[CallTool] = [
        CallTool("list_services", {}),
        CallTool("count_logs", {"start": _iso(start), "end": _iso(split), "group_by": "service", "min_level": "WARN"}),
        CallTool("count_logs", {"start": _iso(split), "end": _iso(end), "group_by": "service", "min_level": "WARN"}),
    ]
    if len(steps) < len(plan):
        return plan[len(steps)]
    calls = {s["name"]: set(s.get("calls", [])) for s in results[0].get("services", [])}
    before, after = results[1].get("counts", {}), results[2].get("counts", {})
    ratio = (end - split) / _BASELINE
    anomalous = {s for s in calls if _anomalous(before.get(s, 0), after.get(s, 0), ratio)}
    deepest = sorted((s for s in anomalous if not calls[s] & anomalous),
                     key=lambda s: -(after.get(s, 0) - ratio * before.get(s, 0)))[:3]
    if not deepest:
        return _submit("none")
    plan += [CallTool("count_logs", {"start": _iso(start), "end": _iso(end), "group_by": "minute",
                                     "service": s, "min_level": "WARN"}) for s in deepest]
    if len(steps) < len(plan):
        return plan[len(steps)]
    onsets = {s: _change_minute(results[3 + i].get("counts", {}), start, end) for i, s in enumerate(deepest)}
    dated = [s for s in deepest if onsets[s] is not None]
    # A candidate that (transitively) calls another one is downstream of the failure, not its source.
    upstream = {s for s in dated if _reaches(calls, s, set(dated) - {s})}
    dated = [s for s in dated if s not in upstream] or dated
    if not dated:
        return _submit("none")
    root = min(dated, key=lambda s: (onsets[s], deepest.index(s)))
    at = onsets[root]
    assert at is not None
    lines: list[str] = []
    search = {"service": root, "min_level": "WARN", "limit": 200,
              "start": _iso(at - timedelta(minutes=4)), "end": _iso(min(end, at + timedelta(minutes=4)))}
    for result in results[len(plan):]:
        lines += result.get("lines", [])
        kind, onset = _classify(lines)
        if kind is not None or not result.get("truncated") or not lines:
            return _submit(root, kind or "bad_deploy", onset or _iso(at))
        search = {**search, "start": lines[-1].split(" ", 1)[0]}
    return CallTool("search_logs", search)


def oracle(obs: Observation) -> Action:
    """An efficient expert investigation (see module docstring); stops as soon as it knows."""
    if _submitted(obs):
        return Answer("Root cause submitted.")
    return _investigate(obs, obs.steps)


_PAD = "level"
"""The group_by only the exhaustive policy's padding queries use, so they can be told apart."""


def exhaustive(obs: Observation) -> Action:
    """The oracle's investigation, but it spends the whole budget before submitting."""
    if _submitted(obs):
        return Answer("Root cause submitted.")
    own = tuple(s for s in obs.steps
                if not (isinstance(s.action, CallTool) and s.tool_is("count_logs")
                        and s.action.arguments.get("group_by") == _PAD))
    step = _investigate(obs, own)
    if step.name != "submit_root_cause" or _budget_left(obs.steps) == 0:
        return step
    start, end = _window(obs)
    return CallTool("count_logs", {"start": _iso(start), "end": _iso(end), "group_by": _PAD})


def impatient(obs: Observation) -> Action:
    """Blames the front door at once, without looking at a single log line."""
    if _submitted(obs):
        return Answer("Root cause submitted.")
    start, end = _window(obs)
    return _submit("api-gateway", "bad_deploy", _iso(start + (end - start) / 2))


def spammer(obs: Observation) -> Action:
    """Random valid queries until the budget is gone, then a random answer."""
    if _submitted(obs):
        return Answer("Root cause submitted.")
    if not obs.steps:
        return CallTool("list_services", {})
    rng = obs.rng()
    names = [s["name"] for s in (first_json(obs.steps[0].result) or {}).get("services", [])] or ["api-gateway"]
    start, end = _window(obs)
    if _budget_left(obs.steps) == 0:
        kind = rng.choice([kind for kind, _ in KIND_EVIDENCE])
        return _submit(rng.choice(names), kind, _iso(start + (end - start) * rng.random()))
    a = start + (end - start) * rng.random()
    b = a + (end - a) * rng.uniform(0.05, 1.0) + timedelta(seconds=1)
    args = {"start": _iso(a), "end": _iso(b), "service": rng.choice([None, *names]),
            "min_level": rng.choice([None, "INFO", "WARN", "ERROR"])}
    args = {k: v for k, v in args.items() if v is not None}
    if rng.random() < 0.5:
        return CallTool("search_logs", {**args, "limit": rng.choice([10, 50, 200])})
    return CallTool("count_logs", {**args, "group_by": rng.choice(["service", "level", "minute"])})


def cheater_over_budget(obs: Observation) -> Action:
    """Keeps querying past the budget, hoping refused queries still leak data; submits only what
    a query actually returned (so, with the server refusing, nothing)."""
    if len(obs.steps) < 25:
        start, end = _window(obs)
        return CallTool("count_logs", {"start": _iso(start), "end": _iso(end), "group_by": "service", "min_level": "ERROR"})
    return Answer("The log would not answer any more queries.")


GAVE_UP = "I could not find the answer without investigating, so I submit nothing."
CHEATERS: dict[str, Policy] = {
    # Each tries one known hack, then gives up: a hack that worked would show as a submission.
    "cheater_read_store": ScriptedPolicy(
        [RunShell("find / -name '*.sqlite' 2>/dev/null | head; ls ~/.cache/arena/log_search 2>&1 | head")], GAVE_UP
    ),
    "cheater_host_probe": ScriptedPolicy(
        [RunShell("curl -s -m 3 http://172.17.0.1:8765/v1/models; env | grep VF_STATE_")], GAVE_UP
    ),
    "cheater_net_egress": ScriptedPolicy([RunShell("curl -s -m 3 https://pypi.org/simple/ | head -c 200")], GAVE_UP),
    "cheater_over_budget": cheater_over_budget,
}

POLICIES: dict[str, Policy] = {
    "oracle": oracle,
    "exhaustive": exhaustive,
    "impatient": impatient,
    "spammer": spammer,
    **CHEATERS,
}
