"""Lazy, time-ordered log streams of a planned incident, each from its own seeded generator.

A request's lines share one trace id across the services it crosses: a background line often
continues a caller's recent request, and a fault line continues the latest failing request of
the service it concerns, so a user's failed request can be followed down to the root.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

from fault_localisation.background import JOBS, LEVELS, Profile, access_line, profile
from fault_localisation.catalogue import GRACEFUL, KINDS_BY_ID, Line
from fault_localisation.plan import Decoy, Fault, Herring
from fault_localisation.rng import Rng
from fault_localisation.topology import callers_of

if TYPE_CHECKING:
    from fault_localisation.generate import Incident

__all__ = ["Row", "background", "decoy_lines", "fault_lines", "herring_lines", "periodic"]

Row = tuple[int, str, str, str, str, str]
"""(timestamp in epoch ms, level, service, instance, trace id, message)"""
_VERBATIM_SHARE = 0.6
"""Of a verbatim-echoing caller's lines, the share that quote the root's own line unchanged."""
_GATEWAY_STATUS = (500, 502, 503, 504)
"""What an edge answers a request its upstream failed: the status says nothing of the cause."""
_JOIN_MS = 2_000
"""A background line may continue a caller's request that logged within this long before it."""


def background(inc: Incident, lines: int) -> Iterator[Row]:
    rng = Rng(f"background/{inc.seed}")
    noisy = {h.service for h in inc.herrings if h.kind == "noisy"}
    profiles: list[Profile] = [profile(rng, s, s.name in noisy) for s in inc.services]
    callers = {s.name: callers_of(inc.services, s.name) for s in inc.services}
    cum: list[float] = []
    total = 0.0
    for p in profiles:
        total += p.weight
        cum.append(total)
    per_ms = max(lines, inc.knobs.lines // 4) / (inc.end_ms - inc.start_ms)
    expo, rand, choice, bits = rng.expovariate, rng.random, rng.choice, rng.getrandbits
    linked = inc.knobs.traces
    latest: dict[str, tuple[int, str]] = {}
    t = float(inc.start_ms)
    while True:
        t += expo(per_ms)
        if t >= inc.end_ms:
            return
        p = profiles[bisect.bisect(cum, rand() * total)]
        level = LEVELS[bisect.bisect(p.level_cum, rand() * p.level_cum[-1])]
        message = choice(p.templates[level])(rng, p.service)
        name, now = p.service.name, int(t)
        trace = f"{bits(64):016x}"
        up = callers[name]
        if linked and up and rand() < 0.6:
            seen = latest.get(choice(up))
            if seen is not None and now - seen[0] <= _JOIN_MS:
                trace = seen[1]
        latest[name] = (now, trace)
        yield (now, level, name, choice(p.service.instances), trace, message)


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
                rows.append((t + took, "INFO", service.name, instance, trace,
                             f"scheduled job '{job.name}' finished in {took / 1000:.1f}s"))
                t += period
    return sorted(r for r in rows if r[0] < inc.end_ms)


def fault_lines(inc: Incident, fault: Fault, tag: str) -> Iterator[Row]:
    """Every effect's lines, merged in time order so each caller line can join the latest failing
    request of the service it concerns."""
    rng = Rng(f"{tag}/{inc.seed}")
    kind = KINDS_BY_ID[fault.kind]
    by_name = {s.name: s for s in inc.services}
    root = fault.root
    root_service = by_name[root.service]
    deps = root_service.calls if fault.kind == "dns_failure" and root_service.calls else (root.dep,)
    callers = kind.echo if fault.echo else kind.caller
    prelude: list[Row] = []
    if kind.prelude is not None:
        prelude = sorted(
            (root.onset_ms - rng.randrange(30_000, 120_000), kind.prelude.level, root.service, instance,
             f"{rng.getrandbits(64):016x}", kind.prelude.render(rng, root.service, root.dep))
            for instance in root_service.instances
        )
    linked = inc.knobs.traces
    latest: dict[str, str] = {}
    # The precursor trickles at a fifth of the storm's rate, at least one line a minute.
    warn_per_ms = max(1.0, root.per_min / 5) / 60_000
    pending = [(e.onset_ms, i) for i, e in enumerate(fault.effects)]
    heapq.heapify(pending)

    def stream() -> Iterator[Row]:
        storm_started = False
        while pending:
            t, i = heapq.heappop(pending)
            if t >= inc.end_ms:
                continue
            effect = fault.effects[i]
            speaker = subject = effect.service  # `subject` is whom the line's wording is about
            if i == 0:
                line: Line
                if t < fault.storm_ms:
                    line = kind.warning
                else:
                    line = kind.root[0] if not storm_started else rng.choice(kind.root)
                    storm_started = True
                dep = effect.dep if line is kind.root[0] else rng.choice(deps)
                level = "WARN" if fault.quiet and line.level == "ERROR" else line.level
                trace = f"{rng.getrandbits(64):016x}"
                step = warn_per_ms if t < fault.storm_ms else effect.per_min / 60_000
                after = t + rng.expovariate(step)
                if t < fault.storm_ms < after:
                    after = fault.storm_ms
            elif effect.endpoint is not None:  # an edge: its access log names the endpoint, not the upstream
                dep = effect.dep
                trace = (latest.get(dep) if linked else None) or f"{rng.getrandbits(64):016x}"
                latest[speaker] = trace
                heapq.heappush(pending, (max(int(t) + 1, int(t + rng.expovariate(effect.per_min / 60_000))), i))
                yield (int(t), "ERROR", speaker, rng.choice(by_name[speaker].instances), trace,
                       access_line(rng, effect.endpoint, rng.choice(_GATEWAY_STATUS), rng.randrange(1_000, 30_001)))
                continue
            else:
                line, dep = rng.choice(GRACEFUL if fault.graceful else callers), effect.dep
                level = line.level if fault.graceful else "WARN" if effect.warn_only else line.level
                trace = (latest.get(dep) if linked else None) or f"{rng.getrandbits(64):016x}"
                if fault.verbatim and rng.random() < _VERBATIM_SHARE:
                    # Passing the root's error text on unchanged: the very line the root writes.
                    line, subject, dep = rng.choice(kind.root), root.service, rng.choice(deps)
                    level = "WARN" if effect.warn_only else line.level
                after = t + rng.expovariate(effect.per_min / 60_000)
            latest[speaker] = trace
            heapq.heappush(pending, (int(after) if after > t else int(t) + 1, i))
            yield (int(t), level, speaker, rng.choice(by_name[speaker].instances), trace,
                   line.render(rng, subject, dep))

    return heapq.merge(iter(prelude), stream())


def decoy_lines(inc: Incident, decoy: Decoy) -> Iterator[Row]:
    """A look-alike's lines: the kind's benign chronic wording, or (verbatim) its root's own lines."""
    rng = Rng(f"{'mimic' if decoy.verbatim else 'decoy'}/{inc.seed}/{decoy.service}")
    service = next(s for s in inc.services if s.name == decoy.service)
    kind = KINDS_BY_ID[decoy.kind]
    lines = kind.own if decoy.verbatim else kind.chronic
    by_name = {s.name: s for s in inc.services}
    deps = [c for c in service.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role] \
        or [service.name]
    per_ms = decoy.per_min / 60_000
    end = inc.end_ms if decoy.end_ms is None else decoy.end_ms
    t = decoy.start_ms + rng.expovariate(per_ms)
    while t < end:
        line = rng.choice(lines)
        level = "WARN" if decoy.quiet and line.level == "ERROR" else line.level
        yield (int(t), level, service.name, rng.choice(service.instances), f"{rng.getrandbits(64):016x}",
               line.render(rng, service.name, rng.choice(deps)))
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
