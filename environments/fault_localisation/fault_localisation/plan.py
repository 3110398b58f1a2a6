"""Pure planning of an incident's real faults: which service fails how and when, and who hears of it.

Each planner draws from the incident's seeded generator and returns frozen plans; `fault_stream`
turns them into log lines. A fault always reaches an edge service (users saw errors), so its root
lies on a call path up to an edge. A fault's hidden chain (root, kind, path, precursor, callers
first, quiet root, its services' timing and rates) is drawn here; what its edges show (when an
endpoint fails, how fast, how often) is drawn apart by `edge`, keyed by the fault's slot alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from fault_localisation.background import ENDPOINTS
from fault_localisation.edge import draw_edge_timing
from fault_localisation.catalogue import FAULT_KINDS, KINDS_BY_ID, FaultKind
from fault_localisation.topology import Service, callers_of

__all__ = ["Cascades", "Effect", "Fault", "Mechanisms", "below", "fits", "plan_cascades", "plan_fault", "reaches_edge"]

_MAX_PROPAGATION_DEPTH = 3
_MAX_FAULT_SHARE = 0.35
_WARN_ONLY_CALLERS = 0.3
_MIN = 60_000
_TRIGGER_JITTER_MS = 45_000
"""Faults with a shared trigger start within this long either side of it."""


@dataclass(frozen=True)
class Mechanisms:
    """Per-incident probabilities of each difficulty mechanism (see `generate.Knobs`)."""

    echo: float
    callers_first: float
    quiet_root: float
    precursor: float
    off_path: float
    verbatim_echo: float = 0.0


@dataclass(frozen=True)
class Effect:
    """One service's share of a fault: from `onset_ms` it logs `per_min` anomaly lines a minute."""

    service: str
    onset_ms: int
    per_min: float
    dep: str
    """The failing service this one's lines concern (for the root: its own affected dependency)."""
    depth: int
    """0 for the root, 1 for its callers, ..."""
    warn_only: bool = False
    """A caller whose retries mostly succeed: it logs its symptom as WARN, so WARN rising without
    ERROR does not single out a quiet root."""
    endpoint: tuple[str, str] | None = None
    """On an edge service: the endpoint (method, route) whose requests fail, which its access log
    names (it never names the upstream that failed them)."""
    ramp_ms: int = 0
    """On an edge service: its failures rise linearly to `per_min` over this long from `onset_ms`."""


@dataclass(frozen=True)
class Fault:
    kind: str
    effects: tuple[Effect, ...]
    """effects[0] is the root; every other effect's `dep` is an earlier effect's service."""
    storm_ms: int
    """When the root's full storm starts; its onset is earlier when a precursor WARN comes first."""
    quiet: bool = False
    """The root never logs ERROR: its storm is WARN lines (its callers still fail loudly)."""
    echo: bool = False
    """Callers quote the root's error text, so they share its wording."""
    callers_first: bool = False
    """The root's direct callers log their symptom before the root logs anything."""
    verbatim: bool = False
    """Echoing callers often pass the root's own lines on verbatim, so even its exact words are
    not its own."""
    graceful: bool = False
    """A stray fault on the users' side whose callers degrade gracefully (they retry or serve a
    local copy): its requests end well at the edge, so users never see it."""

    @property
    def root(self) -> Effect:
        return self.effects[0]


def reaches_edge(services: tuple[Service, ...]) -> frozenset[str]:
    """Services with a call path up to an edge service (their failures can reach users)."""
    callers = {s.name: callers_of(services, s.name) for s in services}
    reached = {s.name for s in services if s.role == "edge"}
    grew = True
    while grew:
        new = {name for name, up in callers.items() if name not in reached and set(up) & reached}
        reached |= new
        grew = bool(new)
    return frozenset(reached)


def fits(kind: FaultKind, service: Service, by_name: dict[str, Service], worker_ok: bool) -> bool:
    role_ok = service.role in kind.roles or (worker_ok and service.role == "worker" and "service" in kind.roles)
    return role_ok and (
        kind.needs_dep_role is None or any(by_name[c].role == kind.needs_dep_role for c in service.calls)
    )


def plan_fault(
    rng: random.Random,
    services: tuple[Service, ...],
    start_ms: int,
    end_ms: int,
    lines: int,
    odds: Mechanisms,
    storm: int | None = None,
    edge: str | None = None,
    exclude: frozenset[str] = frozenset(),
    share: float = _MAX_FAULT_SHARE,
) -> Fault | None:
    """A fault whose root lies on the users' side (below `edge` when given, never in `exclude`) and
    whose callers carry it up to an edge; None when no service fits. Its effects on edge services
    are placeholders (no onset, no rate): `plan_cascades` gives them the edge's own draws. Every
    mechanism's draw is made whether or not it comes up, so switching one knob leaves the rest of
    the chain as it was."""
    by_name = {s.name: s for s in services}
    users = reaches_edge(services) if edge is None else below(services, edge)
    candidates = {
        kind.id: [
            s
            for s in services
            if s.role != "edge"
            and s.name in users
            and s.name not in exclude
            and fits(kind, s, by_name, worker_ok=False)
        ]
        for kind in FAULT_KINDS
    }
    kinds = [k for k, roots in candidates.items() if roots]
    if not kinds:
        return None
    kind = KINDS_BY_ID[rng.choice(kinds)]
    root = rng.choice(candidates[kind.id])
    storm = start_ms + rng.randrange(18 * _MIN, 38 * _MIN) if storm is None else storm
    lead = rng.randrange(2 * _MIN, 6 * _MIN)
    onset = storm - lead if rng.random() < odds.precursor else storm
    quiet = rng.random() < odds.quiet_root
    echo = rng.random() < odds.echo
    first = rng.random() < odds.callers_first
    verbatim = rng.random() < odds.verbatim_echo and echo
    floor = _floor(share)
    per_min = max(floor, lines / 60 * rng.uniform(0.018, 0.03))
    target = rng.choice(
        [c for c in root.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role] or [root.name]
    )
    forced = set(_path_to_edge(rng, services, root.name, edge))
    effects = [Effect(root.name, onset, per_min, target, 0)]
    seen = {root.name}
    for parent in effects:  # grows while iterating: breadth-first up the call graph
        if by_name[parent.service].role == "edge":
            continue
        for caller in callers_of(services, parent.service):
            if caller in seen:
                continue
            if caller not in forced and (
                parent.depth >= _MAX_PROPAGATION_DEPTH or (parent.depth > 0 and rng.random() > 0.75)
            ):
                continue
            seen.add(caller)
            if by_name[caller].role == "edge":  # what users see is drawn apart (`edge`)
                effects.append(Effect(caller, storm, 0.0, parent.service, parent.depth + 1))
                continue
            louder = rng.uniform(1.4, 2.4) if parent.depth == 0 else rng.uniform(0.9, 1.5)
            early, late = rng.randrange(_MIN, 5 * _MIN), rng.randrange(20_000, 150_000)
            if parent.depth == 0 and first:
                at = onset - early
            else:
                at = (storm if parent.depth == 0 else parent.onset_ms) + late
            warn_only = rng.random() < _WARN_ONLY_CALLERS
            effects.append(Effect(caller, at, parent.per_min * louder, parent.service, parent.depth + 1, warn_only))
    return Fault(kind.id, _capped(effects, by_name, end_ms, lines, share), storm, quiet, echo, first, verbatim)


def _floor(share: float) -> float:
    """The least rate a fault's root (and an edge's failures) gets: concurrent faults share the log."""
    return 5.0 * share / _MAX_FAULT_SHARE


@dataclass(frozen=True)
class Cascades:
    """The reported edge and endpoint, the users' fault behind it (None on a control) and the
    concurrent faults (twins) that fail other endpoints of the same edge."""

    edge: str
    endpoint: tuple[str, str]
    fault: Fault | None
    twins: tuple[Fault, ...]
    shared: bool
    """Whether every fault started within 45 s of one trigger."""
    trigger_ms: int
    """The incident's trigger; what misleads is anchored on it, never on one fault."""


EdgeRng = Callable[[int, str], random.Random]
"""The generator of the edge draws of fault slot i on an edge: keyed by nothing else."""


def plan_cascades(
    rng: random.Random,
    services: tuple[Service, ...],
    start_ms: int,
    end_ms: int,
    lines: int,
    odds: Mechanisms,
    control: bool,
    twins: int,
    shared_trigger: float,
    edge_rng: EdgeRng,
) -> Cascades:
    """Up to `twins` + 1 faults (`twins` on a control), each failing its own endpoint of one edge
    service, drawn alike; which one is the users' (on the reported endpoint) is drawn last, so no
    aggregate of a fault tells it apart. With chance `shared_trigger` they all start within 45 s
    of one moment (a zone outage or a fleet-wide config push), else independently.

    With a shared trigger every edge's view of every fault is drawn from `edge_rng(slot, edge)`
    after the trigger window closes, independently of every chain. Without one, an edge can only
    fail after its own fault's storm began, so its timing follows that fault's (the leak that
    keeps `medium`'s unshared incidents easier than `hard`)."""
    edges = [s.name for s in services if s.role == "edge"]
    widest = max(len(below(services, e)) for e in edges)
    # The edge with the most services below it: room for every fault to fail there on its own path.
    edge = rng.choice([e for e in edges if len(below(services, e)) == widest])
    endpoints = rng.sample(ENDPOINTS, len(ENDPOINTS))
    count = twins + (0 if control else 1)
    shared = rng.random() < shared_trigger
    trigger = start_ms + rng.randrange(18 * _MIN + _TRIGGER_JITTER_MS, 38 * _MIN - _TRIGGER_JITTER_MS)
    share = min(_MAX_FAULT_SHARE, 0.6 / max(count, 1))
    faults: list[Fault] = []
    # No fault's root may carry another fault's failure (be one of its effects), nor the reverse,
    # so each failed request ends at its own fault's root.
    involved: set[str] = set()
    tried: set[str] = set()
    while len(faults) < count:
        storm = trigger + rng.randrange(-_TRIGGER_JITTER_MS, _TRIGGER_JITTER_MS) if shared else None
        fault = plan_fault(
            rng, services, start_ms, end_ms, lines, odds, storm, edge, frozenset(involved | tried), share
        )
        if fault is None:
            break
        tried.add(fault.root.service)
        if {f.root.service for f in faults} & {e.service for e in fault.effects}:
            continue
        faults.append(fault)
        involved |= {e.service for e in fault.effects}
    users = None if control or not faults else rng.randrange(len(faults))
    spare = endpoints[len(faults) + 1 :]
    slots = iter(endpoints[1:])
    roles = {s.name: s.role for s in services}
    placed = []
    for i, f in enumerate(faults):
        after = trigger + _TRIGGER_JITTER_MS if shared else f.storm_ms
        endpoint = endpoints[0] if i == users else next(slots)
        placed.append(
            replace(
                f,
                effects=tuple(
                    _at_edge(
                        edge_rng(i, e.service),
                        e,
                        endpoint if e.service == edge else None,
                        spare,
                        after,
                        end_ms,
                        lines,
                        _floor(share) / 2,
                    )
                    if roles[e.service] == "edge"
                    else e
                    for e in f.effects
                ),
            )
        )
    fault = None if users is None else placed[users]
    return Cascades(edge, endpoints[0], fault, tuple(f for i, f in enumerate(placed) if i != users), shared, trigger)


def _at_edge(
    rng: random.Random,
    effect: Effect,
    endpoint: tuple[str, str] | None,
    spare: list[tuple[str, str]],
    after_ms: int,
    end_ms: int,
    lines: int,
    floor: float,
) -> Effect:
    """An edge's effect with the edge's own draws: its timing and, off the reported edge, a spare endpoint."""
    timing = draw_edge_timing(rng, after_ms, end_ms, lines, floor)
    return replace(
        effect,
        onset_ms=timing.onset_ms,
        per_min=timing.per_min,
        ramp_ms=timing.ramp_ms,
        endpoint=endpoint if endpoint is not None else rng.choice(spare),
    )


def below(services: tuple[Service, ...], name: str) -> frozenset[str]:
    """Every service `name` calls, directly or through others."""
    calls = {s.name: s.calls for s in services}
    seen: set[str] = set()
    todo = list(calls[name])
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(calls[dep])
    return frozenset(seen)


def _path_to_edge(rng: random.Random, services: tuple[Service, ...], root: str, edge: str | None = None) -> list[str]:
    """A shortest caller path from `root` up to `edge` (any edge service when None), ties broken at random."""
    by_name = {s.name: s for s in services}
    paths = {root: [root]}
    frontier = [root]
    while frontier:
        rng.shuffle(frontier)
        ahead: list[str] = []
        for name in frontier:
            for caller in callers_of(services, name):
                if caller in paths:
                    continue
                paths[caller] = [*paths[name], caller]
                if by_name[caller].role == "edge" and edge in (None, caller):
                    return paths[caller]
                ahead.append(caller)
        frontier = ahead
    raise ValueError(f"{root} has no call path to an edge service")


def _capped(
    effects: list[Effect], by_name: dict[str, Service], end_ms: int, lines: int, share: float = _MAX_FAULT_SHARE
) -> tuple[Effect, ...]:
    """Quieten the inner callers (never below 0.6x the root) so the fault is at most `share` of the
    log; on small logs the root's minimum rate would otherwise let the callers swamp it. Edges are
    left alone: their rate is their own draw, never the chain's."""

    def volume(group: list[Effect]) -> float:
        return sum(e.per_min * (end_ms - e.onset_ms) / _MIN for e in group)

    root = effects[0]
    callers = [e for e in effects[1:] if by_name[e.service].role != "edge"]
    room = share * lines - volume([root])
    if not callers or volume(callers) <= room:
        return tuple(effects)
    factor = max(room, 0.0) / volume(callers)
    return (
        root,
        *(
            replace(e, per_min=max(e.per_min * factor, 0.6 * root.per_min)) if by_name[e.service].role != "edge" else e
            for e in effects[1:]
        ),
    )
