"""What scripted policies may know: the prompt, their own tool results and an engineer's reading
of log wording — never the label or the generator.

A policy is written as a script, a generator that yields tool calls and receives each call's
parsed result; `scripted` replays it over the steps so far, so the policy stays a pure function
of the observation. Tool results may arrive wrapped in harness text, so each is read as the first
JSON object in it; a result without one (an error) reads as `{}`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from arena_kit.policy import Action, Answer, CallTool, Observation, Policy, Step

if TYPE_CHECKING:
    from log_search.store import GroupBy, Level

__all__ = [
    "BASELINE",
    "KIND_EVIDENCE",
    "KIND_PHRASES",
    "Context",
    "Reported",
    "reported",
    "Script",
    "anomalous",
    "budget_left",
    "change_minute",
    "classify",
    "first_json",
    "fts",
    "iso",
    "line_fields",
    "rate_z",
    "reachable",
    "replay",
    "scripted",
    "submit",
    "submitted",
    "ts",
]

BASELINE = timedelta(minutes=15)
"""The first quarter hour of the window: the system's normal, before any incident of interest."""
_WINDOW = re.compile(r"between (\S+) and (\S+) \(UTC\)")
_REPORTED = re.compile(r"failing requests to (GET|POST|PUT|DELETE) (/\S+) on (\S+) between")
KIND_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("connection_pool_exhaustion", ("connection pool", "connection from pool", "no free connections")),
    ("bad_deploy", ("unhandled exception", "NullPointerException")),
    ("oom_restart_loop", ("OOMKilled", "restarting failed container", "heap usage")),
    ("certificate_expiry", ("certificate", "x509")),
    ("disk_full", ("No space left", "disk usage")),
    ("dns_failure", ("no such host", "name resolution", "DNS lookup")),
    ("config_error", ("invalid configuration", "misconfigured")),
    ("rate_limited", ("Too Many Requests", "quota exceeded")),
    ("cache_stampede", ("hot key", "miss ratio", "output buffer overflow")),
    ("clock_skew", ("clock offset", "NTP")),
)
"""Wording that betrays each fault kind, as an engineer would grep for it."""
KIND_EVIDENCE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(rf"\b{re.escape(p)}\b" for p in phrases), re.IGNORECASE))
    for kind, phrases in KIND_PHRASES
)


@dataclass(frozen=True)
class Reported:
    """What users reported, as the prompt states it: an endpoint on one edge service."""

    method: str
    path: str
    edge: str

    @property
    def text(self) -> str:
        """An FTS5 phrase matching the edge's lines about this endpoint (`POST /api/v1/checkout/812 ...`)."""
        return f'"{self.method} {self.path}"'


def reported(prompt: str) -> Reported | None:
    """The endpoint users reported failing, or None when the prompt names none."""
    match = _REPORTED.search(prompt)
    return None if match is None else Reported(*match.groups())


def fts(phrases: tuple[str, ...] | list[str]) -> str:
    """An FTS5 query matching any of `phrases`."""
    return " OR ".join(f'"{p}"' for p in phrases)


def first_json(text: str | None) -> dict[str, Any] | None:
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


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def line_fields(line: str) -> tuple[str, str, str, str, str] | None:
    """(timestamp, level, service, trace id, message) of a rendered log line, or None."""
    parts = line.split(" ", 5)
    if len(parts) < 6 or not parts[4].startswith("trace="):
        return None
    return parts[0], parts[1], parts[2], parts[4].removeprefix("trace="), parts[5]


def classify(lines: list[str]) -> str | None:
    """The kind most lines' wording points to (None when none does)."""
    hits: dict[str, int] = {}
    for line in lines:
        fields = line_fields(line)
        if fields is None:
            continue
        for kind, pattern in KIND_EVIDENCE:
            if pattern.search(fields[4]):
                hits[kind] = hits.get(kind, 0) + 1
                break
    return max(hits, key=lambda k: hits[k]) if hits else None


def submitted(obs: Observation) -> bool:
    return any(step.tool_is("submit_root_cause") for step in obs.steps)


def submit(service: str, kind: str = "none", evidence: Sequence[str] = ()) -> CallTool:
    """The report: a service and its kind, citing the trace ids of `evidence` (none for "none")."""
    arguments: dict[str, Any] = {"service": service, "fault_kind": kind}
    if evidence:
        arguments["evidence"] = list(evidence)
    return CallTool("submit_root_cause", arguments)


def budget_left(steps: tuple[Step, ...]) -> int | None:
    """Remaining queries per the latest result that reported them (None before any did)."""
    for step in reversed(steps):
        if step.result and "budget spent" in step.result:
            return 0
        budget = (first_json(step.result) or {}).get("budget")
        if isinstance(budget, dict) and "remaining" in budget:
            return int(budget["remaining"])
    return None


def rate_z(before: int, after: int, ratio: float) -> float:
    """How far `after` exceeds the share a steady rate would give it (binomial z-score), where
    the after-period is `ratio` times as long as the before-period."""
    n, p = before + after, ratio / (1 + ratio)
    return 0.0 if n == 0 else (after - n * p) / math.sqrt(n * p * (1 - p))


def anomalous(before: int, after: int, ratio: float) -> bool:
    return rate_z(before, after, ratio) > 3.5 and after > 1.3 * ratio * before


def reachable(calls: dict[str, set[str]], source: str) -> set[str]:
    """Every service `source` calls, directly or through others (by the call graph `list_services` shows)."""
    seen: set[str] = set()
    todo = list(calls.get(source, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return seen


def change_minute(counts: dict[str, int], start: datetime, end: datetime) -> datetime | None:
    """The minute a per-minute series steps up for good (the split maximising the excess over the
    midpoint of early and late rates), or None when no significant step exists."""
    minutes = int((end - start) / timedelta(minutes=1))
    series = [0] * minutes
    for key, n in counts.items():
        index = int((ts(key) - start) / timedelta(minutes=1))
        if 0 <= index < minutes:
            series[index] = n
    base_n = int(BASELINE / timedelta(minutes=1))
    base = sum(series[:base_n]) / base_n
    late = sum(series[-10:]) / 10
    if late <= base:
        return None
    mid = (base + late) / 2
    best, best_at, running = 0.0, 0, 0.0
    for index in range(minutes - 1, 0, -1):
        running += series[index] - mid
        if running > best:
            best, best_at = running, index
    after = sum(series[best_at:])
    if best_at == 0 or rate_z(sum(series) - after, after, (minutes - best_at) / best_at) < 4:
        return None
    return start + timedelta(minutes=best_at)


class Filters(TypedDict, total=False):
    """The line filters search_logs and count_logs share (see the log_search toolset)."""

    service: str
    min_level: Level
    text: str
    trace: str


@dataclass(frozen=True)
class Context:
    """The incident window as the prompt states it, and query builders over it."""

    start: datetime
    end: datetime
    reported: Reported | None = None
    """The endpoint users reported failing, when the prompt names one."""

    @classmethod
    def of(cls, obs: Observation) -> Context:
        match = _WINDOW.search(obs.prompt)
        if match is None:
            raise ValueError("the prompt names no incident window")
        return cls(ts(match.group(1)), ts(match.group(2)), reported(obs.prompt))

    @property
    def split(self) -> datetime:
        return self.start + BASELINE

    @property
    def ratio(self) -> float:
        """How much longer the after-baseline period is than the baseline."""
        return (self.end - self.split) / BASELINE

    def count(
        self, group_by: GroupBy, start: datetime | None = None, end: datetime | None = None, **filters: Unpack[Filters]
    ) -> CallTool:
        return CallTool(
            "count_logs",
            {"start": iso(start or self.start), "end": iso(end or self.end), "group_by": group_by, **filters},
        )

    def search(
        self, start: datetime | None = None, end: datetime | None = None, limit: int = 50, **filters: Unpack[Filters]
    ) -> CallTool:
        return CallTool(
            "search_logs", {"start": iso(start or self.start), "end": iso(end or self.end), "limit": limit, **filters}
        )


Script = Callable[[Context], Generator[CallTool, dict[str, Any], CallTool]]
"""Yields queries, receives each one's parsed result, returns the submission."""


def replay(script: Script, obs: Observation, steps: tuple[Step, ...]) -> tuple[CallTool, bool]:
    """Replay `script` over `steps` (its own past calls): its next query, or its submission and
    True once it has decided."""
    run = script(Context.of(obs))
    try:
        call = next(run)
        for step in steps:
            call = run.send(first_json(step.result) or {})
    except StopIteration as done:
        return done.value, True
    return call, False


def scripted(script: Script) -> Policy:
    """A policy that plays `script` and submits as soon as it decides."""

    def policy(obs: Observation) -> Action:
        if submitted(obs):
            return Answer("Root cause submitted.")
        return replay(script, obs, obs.steps)[0]

    policy.__doc__ = script.__doc__
    return policy
