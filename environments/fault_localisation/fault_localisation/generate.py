"""Pure, seeded incident generator: a topology, background logs, one propagating fault (or none)
and red herrings.

`generate(seed, knobs)` only plans (cheap); `Incident.rows()` streams the log lazily in time order
by merging independently seeded streams, so a 1M-line incident never sits in memory and any
incident replays byte for byte. Fault volume scales with traffic while herrings (a deploy, a blip)
have a fixed size, as in real systems: a rollout logs the same lines however busy the service is.
"""

from __future__ import annotations

import bisect
import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from fault_localisation.background import JOBS, LEVELS, Profile, profile
from fault_localisation.catalogue import FAULT_KINDS, KINDS_BY_ID, FaultKind
from fault_localisation.rng import Rng
from fault_localisation.topology import Service, build_topology, callers_of

__all__ = [
    "SPLITS", "WINDOW_MIN", "Effect", "Fault", "Herring", "Incident", "Knobs",
    "Label", "Row", "generate", "iso", "split_seeds",
]

WINDOW_MIN = 60
CONTROL_RATE = 0.1
SPLITS = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
"""First seed of each split; a split holds up to 1,000,000 seeds."""
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_MAX_PROPAGATION_DEPTH = 3
_MAX_FAULT_SHARE = 0.35

Row = tuple[int, str, str, str, str, str]
"""(timestamp in epoch ms, level, service, instance, trace id, message)"""


@dataclass(frozen=True)
class Knobs:
    services: int = 20
    lines: int = 20_000
    """Approximate number of log lines in the whole incident window."""
    red_herrings: int = 2


@dataclass(frozen=True)
class Effect:
    """One service's share of the fault: from `onset_ms` it logs `per_min` anomaly lines a minute."""

    service: str
    onset_ms: int
    per_min: float
    dep: str
    """The failing service this one's lines concern (for the root: its own affected dependency)."""
    depth: int
    """0 for the root, 1 for its callers, ..."""


@dataclass(frozen=True)
class Fault:
    kind: str
    effects: tuple[Effect, ...]
    """effects[0] is the root; every other effect's `dep` has an earlier onset."""

    @property
    def root(self) -> Effect:
        return self.effects[0]


@dataclass(frozen=True)
class Herring:
    kind: str
    """deploy (a harmless rollout), noisy (a service that is always loud) or blip (a short burst)."""
    service: str
    at_ms: int


@dataclass(frozen=True)
class Label:
    """The held-out answer."""

    service: str
    """The root-cause service, or "none" on a no-fault control."""
    fault_kind: str
    """A catalogue id, or "none"."""
    onset: str | None = None
    """ISO timestamp of the root's first anomalous line; None on a control (a default, because
    traces store task data without None fields)."""


@dataclass(frozen=True)
class Incident:
    seed: int
    knobs: Knobs
    start_ms: int
    end_ms: int
    services: tuple[Service, ...]
    fault: Fault | None
    herrings: tuple[Herring, ...]

    @property
    def label(self) -> Label:
        if self.fault is None:
            return Label("none", "none", None)
        return Label(self.fault.root.service, self.fault.kind, iso(self.fault.root.onset_ms))

    def rows(self) -> Iterator[Row]:
        """Every log line of the window, in time order."""
        periodic = _periodic(self)
        streams = [_background(self, self.knobs.lines - len(periodic) - self._fault_volume()), iter(periodic)]
        if self.fault is not None:
            streams += [_fault_lines(self, self.fault, effect) for effect in self.fault.effects]
        streams += [_herring_lines(self, h) for h in self.herrings if h.kind != "noisy"]
        return heapq.merge(*streams)


    def _fault_volume(self) -> int:
        """Expected number of fault lines, so that the whole log comes to about `knobs.lines`."""
        if self.fault is None:
            return 0
        return int(sum(e.per_min * (self.end_ms - e.onset_ms) / 60_000 for e in self.fault.effects))


def iso(ms: int) -> str:
    """`2024-03-05T14:03:22.123Z`"""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def split_seeds(split: str, count: int) -> range:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    if not 0 <= count <= 1_000_000:
        raise ValueError(f"a split holds at most 1,000,000 tasks, got {count}")
    return range(SPLITS[split], SPLITS[split] + count)


def generate(seed: int, knobs: Knobs = Knobs()) -> Incident:
    rng = Rng(f"incident/{seed}")
    services = build_topology(rng, knobs.services)
    day = _EPOCH + timedelta(days=rng.randrange(730), hours=rng.randrange(23))
    start_ms = int(day.timestamp() * 1000)
    end_ms = start_ms + WINDOW_MIN * 60_000
    fault = None if rng.random() < CONTROL_RATE else _plan_fault(rng, services, start_ms, knobs)
    herrings = _plan_herrings(rng, services, fault, start_ms, knobs.red_herrings)
    return Incident(seed, knobs, start_ms, end_ms, services, fault, herrings)


def _plan_fault(rng: random.Random, services: tuple[Service, ...], start_ms: int, knobs: Knobs) -> Fault:
    by_name = {s.name: s for s in services}
    candidates = {kind.id: _roots(kind, services, by_name) for kind in FAULT_KINDS}
    kind = KINDS_BY_ID[rng.choice([k for k, roots in candidates.items() if roots])]
    root = rng.choice(candidates[kind.id])
    onset = start_ms + rng.randrange(18 * 60_000, 38 * 60_000)
    per_min = max(5.0, knobs.lines / WINDOW_MIN * rng.uniform(0.012, 0.02))
    target = rng.choice([c for c in root.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role]
                        or [root.name])
    effects = [Effect(root.name, onset, per_min, target, 0)]
    seen = {root.name}
    for parent in effects:  # grows while iterating: breadth-first up the call graph
        if parent.depth >= _MAX_PROPAGATION_DEPTH:
            continue
        for caller in callers_of(services, parent.service):
            if caller in seen or (parent.depth > 0 and rng.random() > 0.75):
                continue
            seen.add(caller)
            louder = rng.uniform(2.0, 3.5) if parent.depth == 0 else rng.uniform(0.9, 1.5)
            if by_name[caller].role == "edge":
                louder *= 1.5
            delay = rng.randrange(20_000, 150_000)
            effects.append(Effect(caller, parent.onset_ms + delay, parent.per_min * louder, parent.service,
                                  parent.depth + 1))
    return Fault(kind.id, _capped(effects, start_ms + WINDOW_MIN * 60_000, knobs.lines))


def _capped(effects: list[Effect], end_ms: int, lines: int) -> tuple[Effect, ...]:
    """Quieten the callers (never below 1.1x the root) so the fault is at most ~35% of the log;
    on small logs the root's minimum rate would otherwise let the callers swamp it."""
    def volume(group: list[Effect]) -> float:
        return sum(e.per_min * (end_ms - e.onset_ms) / 60_000 for e in group)

    root, callers = effects[0], effects[1:]
    room = _MAX_FAULT_SHARE * lines - volume([root])
    if not callers or volume(callers) <= room:
        return tuple(effects)
    factor = max(room, 0.0) / volume(callers)
    return (root, *(replace(e, per_min=max(e.per_min * factor, 1.1 * root.per_min)) for e in callers))


def _roots(kind: FaultKind, services: tuple[Service, ...], by_name: dict[str, Service]) -> list[Service]:
    return [
        s for s in services
        if s.role in kind.roles and callers_of(services, s.name)
        and (kind.needs_dep_role is None or any(by_name[c].role == kind.needs_dep_role for c in s.calls))
    ]


def _plan_herrings(rng: random.Random, services: tuple[Service, ...], fault: Fault | None, start_ms: int,
                   count: int) -> tuple[Herring, ...]:
    root = fault.root.service if fault else None
    anchor = fault.root.onset_ms if fault else start_ms + rng.randrange(20 * 60_000, 40 * 60_000)
    apps = [s.name for s in services if s.role in ("edge", "service", "worker") and s.name != root]
    others = [s.name for s in services if s.name != root]
    herrings: list[Herring] = []
    for i in range(count):
        kind = ("deploy", "noisy", "blip")[i % 3]
        pool = apps if kind == "deploy" else others
        fresh = [n for n in pool if n not in {h.service for h in herrings}] or pool
        at = anchor + rng.randrange(-10 * 60_000, 10 * 60_000)
        herrings.append(Herring(kind, rng.choice(fresh), at))
    return tuple(herrings)


def _background(inc: Incident, lines: int) -> Iterator[Row]:
    rng = Rng(f"background/{inc.seed}")
    noisy = {h.service for h in inc.herrings if h.kind == "noisy"}
    profiles: list[Profile] = [profile(rng, s, s.name in noisy) for s in inc.services]
    cum: list[float] = []
    total = 0.0
    for p in profiles:
        total += p.weight
        cum.append(total)
    per_ms = max(lines, inc.knobs.lines // 4) / (inc.end_ms - inc.start_ms)
    expo, rand, choice, bits = rng.expovariate, rng.random, rng.choice, rng.getrandbits
    t = float(inc.start_ms)
    while True:
        t += expo(per_ms)
        if t >= inc.end_ms:
            return
        p = profiles[bisect.bisect(cum, rand() * total)]
        level = LEVELS[bisect.bisect(p.level_cum, rand() * p.level_cum[-1])]
        message = choice(p.templates[level])(rng, p.service)
        yield (int(t), level, p.service.name, choice(p.service.instances), f"{bits(64):016x}", message)


def _periodic(inc: Incident) -> list[Row]:
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


def _fault_lines(inc: Incident, fault: Fault, effect: Effect) -> Iterator[Row]:
    rng = Rng(f"fault/{inc.seed}/{effect.service}")
    kind = KINDS_BY_ID[fault.kind]
    service = next(s for s in inc.services if s.name == effect.service)
    lines = kind.root if effect.depth == 0 else kind.caller
    deps = service.calls if fault.kind == "dns_failure" and service.calls else (effect.dep,)
    if effect.depth == 0 and kind.precursor is not None:
        yield from sorted(
            (effect.onset_ms - rng.randrange(30_000, 120_000), kind.precursor.level, service.name, instance,
             f"{rng.getrandbits(64):016x}", kind.precursor.render(rng, service.name, effect.dep))
            for instance in service.instances
        )
    t = float(effect.onset_ms)
    line = lines[0]
    per_ms = effect.per_min / 60_000
    while t < inc.end_ms:
        dep = effect.dep if effect.depth > 0 or line is lines[0] else rng.choice(deps)
        yield (int(t), line.level, service.name, rng.choice(service.instances), f"{rng.getrandbits(64):016x}",
               line.render(rng, service.name, dep))
        t += rng.expovariate(per_ms)
        line = rng.choice(lines)


def _herring_lines(inc: Incident, herring: Herring) -> Iterator[Row]:
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
