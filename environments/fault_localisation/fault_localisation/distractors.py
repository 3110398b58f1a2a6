"""Planning what misleads: a stray fault that never reaches users, look-alikes that write a fault
kind's wording on healthy services (benign chronic lines, or a root's own lines verbatim) and
herrings. Each is anchored on the incident's trigger or the window, never on one fault's own
timing, so none of them points at the users' fault."""

from __future__ import annotations

import random
from dataclasses import dataclass

from fault_localisation.catalogue import FAULT_KINDS, KINDS_BY_ID
from fault_localisation.plan import Effect, Fault, fits, reaches_edge
from fault_localisation.topology import Service, callers_of

__all__ = ["Decoy", "Herring", "plan_decoys", "plan_herrings", "plan_mimics", "plan_stray"]

_MIN = 60_000


@dataclass(frozen=True)
class Decoy:
    """A healthy service that logs a fault kind's wording at a steady rate: all hour, or from when
    a batch job starts mid-window (louder then, and never on an edge, so users see nothing)."""

    service: str
    kind: str
    per_min: float
    start_ms: int
    end_ms: int | None = None
    """When a burst stops; None: it lasts to the end of the window."""
    verbatim: bool = False
    """It writes the kind's own root and precursor lines (same templates, same numbers), not the
    benign chronic ones."""
    quiet: bool = False
    """A verbatim look-alike that logs the root's ERROR lines as WARN (as a quiet root does)."""


@dataclass(frozen=True)
class Herring:
    kind: str
    """deploy (a harmless rollout), noisy (a service that is always loud) or blip (a short burst)."""
    service: str
    at_ms: int


def plan_stray(
    rng: random.Random,
    services: tuple[Service, ...],
    faults: tuple[Fault, ...],
    start_ms: int,
    trigger_ms: int,
    lines: int,
    reachable: float = 0.0,
) -> Fault | None:
    """A real fault that never reaches users: in a service no edge depends on (a batch worker), or,
    with chance `reachable`, in one on the users' side whose callers degrade gracefully. It
    usually starts before the incident's trigger, so "whatever broke first" names it. It keeps
    clear of the services the incident's `faults` involve."""
    by_name = {s.name: s for s in services}
    users = reaches_edge(services)
    graceful = rng.random() < reachable
    busy = {e.service for f in faults for e in f.effects}
    options = [
        (kind, s)
        for kind in FAULT_KINDS
        for s in services
        if s.name not in users and s.name not in busy and fits(kind, s, by_name, worker_ok=True)
    ]
    # A graceful stray's callers must not be on the users' fault path (they would mix both
    # failures) and one must be an inner service, which degrades gracefully where users can't see.
    inner = [
        (kind, s)
        for kind in FAULT_KINDS
        for s in services
        if s.name in users
        and s.role != "edge"
        and s.name not in busy
        and fits(kind, s, by_name, worker_ok=False)
        and _graceful_callers(services, s.name, busy)
    ]
    graceful = graceful and bool(inner)
    options = inner if graceful else options
    if not options:
        return None
    kind, service = rng.choice(options)
    if rng.random() < 0.75:
        onset = max(start_ms + 16 * _MIN, trigger_ms - rng.randrange(2 * _MIN, 12 * _MIN))
    else:
        onset = trigger_ms + rng.randrange(_MIN, 10 * _MIN)
    per_min = max(3.0, lines / 60 * rng.uniform(0.012, 0.02) * rng.uniform(1.0, 2.0))
    dep = rng.choice(
        [c for c in service.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role]
        or [service.name]
    )
    effects = [Effect(service.name, onset, per_min, dep, 0)]
    if graceful:
        effects += [
            Effect(
                caller,
                onset + rng.randrange(20_000, 150_000),
                per_min * rng.uniform(0.5, 1.2),
                service.name,
                1,
                warn_only=True,
            )
            for caller in _graceful_callers(services, service.name, busy)
        ]
    return Fault(kind.id, tuple(effects), onset, graceful=graceful)


def _graceful_callers(services: tuple[Service, ...], name: str, busy: set[str]) -> list[str]:
    """The inner (non-edge) callers of `name`, when none of its callers is on the users' fault path."""
    callers = callers_of(services, name)
    if set(callers) & busy:
        return []
    by_name = {s.name: s for s in services}
    return [c for c in callers if by_name[c].role != "edge"]


def plan_decoys(
    rng: random.Random,
    services: tuple[Service, ...],
    fault: Fault | None,
    stray: Fault | None,
    count: int,
    start_ms: int,
    lines: int,
    others: tuple[Fault, ...] = (),
) -> tuple[Decoy, ...]:
    """`count` healthy services that log fault wording; the first one speaks `fault`'s own wording
    (one of the incident's faults), and about half of those off the edge start mid-window."""
    failing = {f.root.service for f in (fault, stray, *others) if f is not None}
    pool = [s for s in services if s.name not in failing]
    kinds = [kind.id for kind in FAULT_KINDS]
    decoys: list[Decoy] = []
    for i, service in enumerate(rng.sample(pool, min(count, len(pool)))):
        kind = fault.kind if fault is not None and i == 0 else rng.choice(kinds)
        if service.role != "edge" and rng.random() < 0.5:
            decoys.append(
                Decoy(
                    service.name,
                    kind,
                    max(2.0, lines / 60 * rng.uniform(0.01, 0.025)),
                    start_ms + rng.randrange(16 * _MIN, 40 * _MIN),
                )
            )
        else:
            decoys.append(Decoy(service.name, kind, max(0.5, lines / 60 * rng.uniform(0.002, 0.006)), start_ms))
    return tuple(decoys)


def plan_mimics(
    rng: random.Random,
    services: tuple[Service, ...],
    faults: tuple[Fault | None, ...],
    taken: set[str],
    count: int,
    start_ms: int,
    end_ms: int,
    lines: int,
) -> tuple[Decoy, ...]:
    """`count` healthy services on the users' side (inner, reaching an edge) that write a fault
    kind's own root and precursor lines verbatim: 40% sparsely all hour, 60% in a mid-window
    burst as loud as a root's storm, whose callers stay healthy. Half copy `faults[0]`'s kind
    where the service's role can have it. Only timing, rate, the call graph and a failing
    request's trace tell them from a root."""
    by_name = {s.name: s for s in services}
    users = reaches_edge(services)
    fault = faults[0]
    busy = taken | {e.service for f in faults if f is not None for e in f.effects}
    pool = [s for s in services if s.role != "edge" and s.name in users and s.name not in busy]
    mimics: list[Decoy] = []
    for service in rng.sample(pool, min(count, len(pool))):
        fitting = [kind for kind in FAULT_KINDS if fits(kind, service, by_name, worker_ok=False)]
        own = None if fault is None else KINDS_BY_ID[fault.kind]
        same = own is not None and rng.random() < 0.5 and own in fitting
        kind = own if same else rng.choice(fitting) if fitting else None
        quiet, burst = rng.random() < 0.4, rng.random() < 0.6
        if kind is None:
            continue
        if burst:
            begin = start_ms + rng.randrange(16 * _MIN, 36 * _MIN)
            stop = None if rng.random() < 0.7 else min(end_ms, begin + rng.randrange(8 * _MIN, 30 * _MIN))
            per_min = max(5.0, lines / 60 * rng.uniform(0.015, 0.04))
            mimics.append(Decoy(service.name, kind.id, per_min, begin, stop, verbatim=True, quiet=quiet))
        else:
            per_min = max(0.3, lines / 60 * rng.uniform(0.001, 0.004))
            mimics.append(Decoy(service.name, kind.id, per_min, start_ms, verbatim=True, quiet=quiet))
    return tuple(mimics)


def plan_herrings(
    rng: random.Random, services: tuple[Service, ...], faults: tuple[Fault, ...], trigger_ms: int, count: int
) -> tuple[Herring, ...]:
    """`count` harmless events within ten minutes of the trigger: a deploy, an always-noisy
    service, a short error blip, on services no fault's root is."""
    failing = {f.root.service for f in faults}
    anchor = trigger_ms
    apps = [s.name for s in services if s.role in ("edge", "service", "worker") and s.name not in failing]
    bystanders = [s.name for s in services if s.name not in failing]
    herrings: list[Herring] = []
    for i in range(count):
        kind = ("deploy", "noisy", "blip")[i % 3]
        pool = apps if kind == "deploy" else bystanders
        fresh = [n for n in pool if n not in {h.service for h in herrings}] or pool
        at = anchor + rng.randrange(-10 * _MIN, 10 * _MIN)
        herrings.append(Herring(kind, rng.choice(fresh), at))
    return tuple(herrings)
