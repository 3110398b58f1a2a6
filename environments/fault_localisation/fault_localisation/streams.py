"""Lazy, time-ordered log streams of a planned incident's background, jobs, look-alikes and herrings,
each from its own seeded generator (a fault's own lines: `fault_stream`).

An edge logs each request it serves twice, under the request's own trace id: when it receives it
and when it answers it (its access line). An inner service's background line often continues a
dependency's request that logged just before it (the callee answered, then the caller finished).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

from fault_localisation.background import ENDPOINTS, JOBS, LEVELS, Access, Profile, access_line, profile, request_line
from fault_localisation.catalogue import KINDS_BY_ID
from fault_localisation.distractors import Decoy, Herring
from fault_localisation.rng import Rng

if TYPE_CHECKING:
    from fault_localisation.generate import Incident

__all__ = ["Row", "background", "decoy_lines", "herring_lines", "periodic"]

Row = tuple[int, str, str, str, str, str]
"""(timestamp in epoch ms, level, service, instance, trace id, message)"""
_JOIN_MS = 2_000
"""A background line may continue a dependency's request that logged within this long before it."""


def background(inc: Incident, lines: int) -> Iterator[Row]:
    rng = Rng(f"background/{inc.seed}")
    noisy = {h.service for h in inc.herrings if h.kind == "noisy"}
    profiles: list[Profile] = [profile(rng, s, s.name in noisy) for s in inc.services]
    calls = {s.name: s.calls for s in inc.services}
    cum: list[float] = []
    total = 0.0
    for p in profiles:
        total += p.weight
        cum.append(total)
    # An access-log request is two lines (received, answered).
    per_draw = 1 + sum(p.weight * p.access_share for p in profiles) / total
    per_ms = max(lines, inc.knobs.lines // 4) / per_draw / (inc.end_ms - inc.start_ms)
    expo, rand, choice, bits, randrange = rng.expovariate, rng.random, rng.choice, rng.getrandbits, rng.randrange
    linked = inc.knobs.traces
    latest: dict[str, tuple[int, str]] = {}
    answers: list[Row] = []  # access lines of requests received, not yet answered
    t = float(inc.start_ms)
    while True:
        t += expo(per_ms)
        if t >= inc.end_ms:
            break
        p = profiles[bisect.bisect(cum, rand() * total)]
        level = LEVELS[bisect.bisect(p.level_cum, rand() * p.level_cum[-1])]
        template = choice(p.templates[level])
        name, now = p.service.name, int(t)
        instance = choice(p.service.instances)
        trace = f"{bits(64):016x}"
        while answers and answers[0][0] <= now:
            yield heapq.heappop(answers)
        if isinstance(template, Access):
            endpoint, request = choice(ENDPOINTS), randrange(1, 1_000_000)
            ms, status = randrange(template.low_ms, template.high_ms), choice(template.statuses)
            yield (now, "DEBUG", name, instance, trace, request_line(endpoint, request))
            if now + ms < inc.end_ms:
                heapq.heappush(
                    answers, (now + ms, level, name, instance, trace, access_line(endpoint, request, status, ms))
                )
            continue
        message = template(rng, p.service)
        down = calls[name]
        if linked and down and p.service.role != "edge" and rand() < 0.6:
            seen = latest.get(choice(down))
            if seen is not None and now - seen[0] <= _JOIN_MS:
                trace = seen[1]
        latest[name] = (now, trace)
        yield (now, level, name, instance, trace, message)
    while answers:
        yield heapq.heappop(answers)


def periodic(inc: Incident) -> list[Row]:
    rng = Rng(f"periodic/{inc.seed}")
    rows: list[Row] = []
    for service in inc.services:
        jobs = rng.sample(JOBS[service.role], rng.randint(0, 1))
        for job in jobs:
            period = job.period_min * 60_000
            t = inc.start_ms + rng.randrange(period)
            instance = service.instances[0]
            while t < inc.end_ms:
                trace = f"{rng.getrandbits(64):016x}"
                rows.append((t, "INFO", service.name, instance, trace, f"scheduled job '{job.name}' started"))
                took = rng.randrange(40, min(period, 50_000))
                rows.append(
                    (
                        t + took,
                        "INFO",
                        service.name,
                        instance,
                        trace,
                        f"scheduled job '{job.name}' finished in {took / 1000:.1f}s",
                    )
                )
                t += period
    return sorted(r for r in rows if r[0] < inc.end_ms)


def decoy_lines(inc: Incident, decoy: Decoy) -> Iterator[Row]:
    """A look-alike's lines: the kind's benign chronic wording, or (verbatim) its root's own lines."""
    rng = Rng(f"{'mimic' if decoy.verbatim else 'decoy'}/{inc.seed}/{decoy.service}")
    service = next(s for s in inc.services if s.name == decoy.service)
    kind = KINDS_BY_ID[decoy.kind]
    lines = kind.own if decoy.verbatim else kind.chronic
    by_name = {s.name: s for s in inc.services}
    deps = [c for c in service.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role] or [
        service.name
    ]
    per_ms = decoy.per_min / 60_000
    end = inc.end_ms if decoy.end_ms is None else decoy.end_ms
    t = decoy.start_ms + rng.expovariate(per_ms)
    while t < end:
        line = rng.choice(lines)
        level = "WARN" if decoy.quiet and line.level == "ERROR" else line.level
        yield (
            int(t),
            level,
            service.name,
            rng.choice(service.instances),
            f"{rng.getrandbits(64):016x}",
            line.render(rng, service.name, rng.choice(deps)),
        )
        t += rng.expovariate(per_ms)


def herring_lines(inc: Incident, herring: Herring) -> Iterator[Row]:
    rng = Rng(f"herring/{inc.seed}/{herring.kind}/{herring.service}")
    service = next(s for s in inc.services if s.name == herring.service)
    rows: list[Row] = []

    def emit(at: int, level: str, instance: str, message: str) -> None:
        if inc.start_ms <= at < inc.end_ms:
            rows.append((at, level, service.name, instance, f"{rng.getrandbits(64):016x}", message))

    t = herring.at_ms
    if herring.kind == "deploy":
        major, minor, patch = rng.randrange(1, 9), rng.randrange(40), rng.randrange(20)
        old, new = f"{major}.{minor}.{patch}", f"{major}.{minor}.{patch + 1}"
        emit(t, "INFO", service.instances[0], f"rolling update started: {service.name} {old} -> {new}")
        for instance in service.instances:
            t += rng.randrange(5_000, 30_000)
            emit(t, "INFO", instance, "instance terminated (draining connections)")
            emit(t + 4_000, "WARN", instance, "readiness probe failed: HTTP 503 (attempt 1 of 3)")
            emit(t + 9_000, "INFO", instance, f"instance started, version {new}")
        emit(t + 12_000, "INFO", service.instances[0], f"rolling update complete: {service.name} now at version {new}")
    else:  # blip: a short burst of transient errors that heals by itself
        dep = rng.choice(service.calls) if service.calls else "a client"
        for _ in range(rng.randint(5, 10)):
            t += rng.randrange(500, 5_000)
            emit(t, "ERROR", rng.choice(service.instances), f"connection reset by peer while talking to {dep}")
        emit(t + 2_000, "INFO", service.instances[0], f"connection to {dep} re-established")
    return iter(sorted(rows))
