"""Pure incident planning: which service fails how and when, who hears of it, and what misleads.

Each planner draws from the incident's seeded generator and returns frozen plans; `streams`
turns plans into log lines. A fault always reaches an edge service (users saw errors), so its
root lies on a call path up to an edge. A stray fault strikes a service no edge depends on, or
one on the users' side whose callers degrade gracefully, so its failure never reaches users;
verbatim look-alikes write a root's own lines on healthy services.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from fault_localisation.background import ENDPOINTS
from fault_localisation.catalogue import FAULT_KINDS, KINDS_BY_ID, FaultKind
from fault_localisation.topology import Service, callers_of

__all__ = ["Cascades", "Decoy", "Effect", "Fault", "Herring", "Mechanisms", "below", "plan_cascades", "plan_decoys",
           "plan_fault", "plan_herrings", "plan_mimics", "plan_stray", "reaches_edge"]

_MAX_PROPAGATION_DEPTH = 3
_MAX_FAULT_SHARE = 0.35
_WARN_ONLY_CALLERS = 0.3
_MIN = 60_000
_EDGE_LAG_MS = 12 * _MIN
"""Users see an upstream's failures at the edge up to this long after it began failing."""
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


@dataclass(frozen=True)
class Fault:
    kind: str
    effects: tuple[Effect, ...]
    """effects[0] is the root; every other effect's `dep` is an earlier effect's service."""
    storm_ms: int
    """When the root's full storm starts; later than its onset when a precursor WARN comes first."""
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


def _fits(kind: FaultKind, service: Service, by_name: dict[str, Service], worker_ok: bool) -> bool:
    role_ok = service.role in kind.roles or (worker_ok and service.role == "worker" and "service" in kind.roles)
    return role_ok and (kind.needs_dep_role is None or any(by_name[c].role == kind.needs_dep_role
                                                            for c in service.calls))


def plan_fault(rng: random.Random, services: tuple[Service, ...], start_ms: int, end_ms: int, lines: int,
               odds: Mechanisms, onset: int | None = None, edge: str | None = None,
               exclude: frozenset[str] = frozenset(), share: float = _MAX_FAULT_SHARE) -> Fault | None:
    """A fault whose root lies on the users' side (below `edge` when given, never in `exclude`) and
    whose callers carry it up to an edge; None when no service fits."""
    by_name = {s.name: s for s in services}
    users = reaches_edge(services) if edge is None else below(services, edge)
    candidates = {kind.id: [s for s in services if s.role != "edge" and s.name in users and s.name not in exclude
                            and _fits(kind, s, by_name, worker_ok=False)] for kind in FAULT_KINDS}
    kinds = [k for k, roots in candidates.items() if roots]
    if not kinds:
        return None
    kind = KINDS_BY_ID[rng.choice(kinds)]
    root = rng.choice(candidates[kind.id])
    onset = start_ms + rng.randrange(18 * _MIN, 38 * _MIN) if onset is None else onset
    storm = onset + (rng.randrange(2 * _MIN, 6 * _MIN) if rng.random() < odds.precursor else 0)
    quiet = rng.random() < odds.quiet_root
    echo = rng.random() < odds.echo
    first = rng.random() < odds.callers_first
    verbatim = rng.random() < odds.verbatim_echo and echo
    floor = 5.0 * share / _MAX_FAULT_SHARE  # concurrent faults share the log: a lower floor for each
    per_min = max(floor, lines / 60 * rng.uniform(0.012, 0.02))
    target = rng.choice([c for c in root.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role]
                        or [root.name])
    forced = set(_path_to_edge(rng, services, root.name, edge))
    effects = [Effect(root.name, onset, per_min, target, 0)]
    seen = {root.name}
    for parent in effects:  # grows while iterating: breadth-first up the call graph
        for caller in callers_of(services, parent.service):
            if caller in seen:
                continue
            if caller not in forced and (parent.depth >= _MAX_PROPAGATION_DEPTH
                                         or (parent.depth > 0 and rng.random() > 0.75)):
                continue
            seen.add(caller)
            louder = rng.uniform(2.0, 3.5) if parent.depth == 0 else rng.uniform(0.9, 1.5)
            rate = parent.per_min * louder
            if by_name[caller].role == "edge":
                # An edge's failure rate is its own traffic's, not its upstream's loudness.
                rate = max(floor, lines / 60 * rng.uniform(0.015, 0.045))
            if by_name[caller].role == "edge":
                # The edge absorbs the first failures (retries, a circuit breaker still closed, cached
                # answers): users see errors some minutes after its upstream began failing.
                began = storm if parent.depth == 0 else parent.onset_ms
                # ... but early enough that users saw them for the window's last ten minutes.
                at = min(began + rng.randrange(20_000, _EDGE_LAG_MS), max(began + 20_000, end_ms - 10 * _MIN))
            elif parent.depth == 0 and first:
                at = onset - rng.randrange(_MIN, 5 * _MIN)
            else:
                at = (storm if parent.depth == 0 else parent.onset_ms) + rng.randrange(20_000, 150_000)
            warn_only = by_name[caller].role != "edge" and rng.random() < _WARN_ONLY_CALLERS
            effects.append(Effect(caller, at, rate, parent.service, parent.depth + 1, warn_only))
    return Fault(kind.id, _capped(effects, end_ms, lines, share), storm, quiet, echo, first, verbatim)


@dataclass(frozen=True)
class Cascades:
    """The reported edge and endpoint, the users' fault behind it (None on a control) and the
    concurrent faults (twins) that fail other endpoints of the same edge."""

    edge: str
    endpoint: tuple[str, str]
    fault: Fault | None
    twins: tuple[Fault, ...]
    shared: bool
    """Whether every fault started within two minutes of one trigger."""


def plan_cascades(rng: random.Random, services: tuple[Service, ...], start_ms: int, end_ms: int, lines: int,
                  odds: Mechanisms, control: bool, twins: int, shared_trigger: float) -> Cascades:
    """Up to `twins` + 1 faults (`twins` on a control), each failing its own endpoint of one edge
    service, drawn alike; which one is the users' (on the reported endpoint) is drawn last, so no
    aggregate of a fault tells it apart. With chance `shared_trigger` they all start within two
    45 s of one moment (a zone outage or a fleet-wide config push), else independently."""
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
        onset = trigger + rng.randrange(-_TRIGGER_JITTER_MS, _TRIGGER_JITTER_MS) if shared else None
        fault = plan_fault(rng, services, start_ms, end_ms, lines, odds, onset, edge, frozenset(involved | tried),
                           share)
        if fault is None:
            break
        tried.add(fault.root.service)
        if {f.root.service for f in faults} & {e.service for e in fault.effects}:
            continue
        faults.append(fault)
        involved |= {e.service for e in fault.effects}
    users = None if control or not faults else rng.randrange(len(faults))
    spare = endpoints[len(faults) + 1:]
    slots = iter(endpoints[1:])
    placed = [_at_endpoints(rng, f, edge, endpoints[0] if i == users else next(slots), spare, services)
              for i, f in enumerate(faults)]
    fault = None if users is None else placed[users]
    return Cascades(edge, endpoints[0], fault, tuple(f for i, f in enumerate(placed) if i != users), shared)


def _at_endpoints(rng: random.Random, fault: Fault, edge: str, endpoint: tuple[str, str],
                  spare: list[tuple[str, str]], services: tuple[Service, ...]) -> Fault:
    """The fault with its endpoint on the reported edge, and a spare endpoint on any other edge."""
    roles = {s.name: s.role for s in services}
    return replace(fault, effects=tuple(
        replace(e, endpoint=endpoint if e.service == edge else rng.choice(spare)) if roles[e.service] == "edge" else e
        for e in fault.effects))


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


def _capped(effects: list[Effect], end_ms: int, lines: int, share: float = _MAX_FAULT_SHARE) -> tuple[Effect, ...]:
    """Quieten the callers (never below 1.1x the root) so the fault is at most `share` of the log;
    on small logs the root's minimum rate would otherwise let the callers swamp it."""
    def volume(group: list[Effect]) -> float:
        return sum(e.per_min * (end_ms - e.onset_ms) / _MIN for e in group)

    root, callers = effects[0], effects[1:]
    room = share * lines - volume([root])
    if not callers or volume(callers) <= room:
        return tuple(effects)
    factor = max(room, 0.0) / volume(callers)
    return (root, *(replace(e, per_min=max(e.per_min * factor, 1.1 * root.per_min)) for e in callers))


def plan_stray(rng: random.Random, services: tuple[Service, ...], fault: Fault | None, start_ms: int,
               lines: int, reachable: float = 0.0, others: tuple[Fault, ...] = ()) -> Fault | None:
    """A real fault that never reaches users: in a service no edge depends on (a batch worker), or,
    with chance `reachable`, in one on the users' side whose callers degrade gracefully. It
    usually starts before the users' fault, so "whatever broke first" names it. It keeps clear of
    the services `others` (concurrent faults) involve."""
    by_name = {s.name: s for s in services}
    users = reaches_edge(services)
    graceful = rng.random() < reachable
    busy = {e.service for f in (fault, *others) if f is not None for e in f.effects}
    options = [(kind, s) for kind in FAULT_KINDS for s in services
               if s.name not in users and s.name not in busy and _fits(kind, s, by_name, worker_ok=True)]
    # A graceful stray's callers must not be on the users' fault path (they would mix both
    # failures) and one must be an inner service, which degrades gracefully where users can't see.
    inner = [(kind, s) for kind in FAULT_KINDS for s in services
             if s.name in users and s.role != "edge" and s.name not in busy
             and _fits(kind, s, by_name, worker_ok=False) and _graceful_callers(services, s.name, busy)]
    graceful = graceful and bool(inner)
    options = inner if graceful else options
    if not options:
        return None
    kind, service = rng.choice(options)
    if fault is None:
        onset = start_ms + rng.randrange(16 * _MIN, 45 * _MIN)
    elif rng.random() < 0.75:
        onset = max(start_ms + 16 * _MIN, fault.root.onset_ms - rng.randrange(2 * _MIN, 12 * _MIN))
    else:
        onset = fault.root.onset_ms + rng.randrange(_MIN, 10 * _MIN)
    per_min = max(3.0, lines / 60 * rng.uniform(0.012, 0.02) * rng.uniform(1.0, 2.0))
    dep = rng.choice([c for c in service.calls if not kind.needs_dep_role or by_name[c].role == kind.needs_dep_role]
                     or [service.name])
    effects = [Effect(service.name, onset, per_min, dep, 0)]
    if graceful:
        effects += [Effect(caller, onset + rng.randrange(20_000, 150_000), per_min * rng.uniform(0.5, 1.2),
                           service.name, 1, warn_only=True)
                    for caller in _graceful_callers(services, service.name, busy)]
    return Fault(kind.id, tuple(effects), onset, graceful=graceful)


def _graceful_callers(services: tuple[Service, ...], name: str, busy: set[str]) -> list[str]:
    """The inner (non-edge) callers of `name`, when none of its callers is on the users' fault path."""
    callers = callers_of(services, name)
    if set(callers) & busy:
        return []
    by_name = {s.name: s for s in services}
    return [c for c in callers if by_name[c].role != "edge"]


def plan_decoys(rng: random.Random, services: tuple[Service, ...], fault: Fault | None, stray: Fault | None,
                count: int, start_ms: int, lines: int, others: tuple[Fault, ...] = ()) -> tuple[Decoy, ...]:
    """`count` healthy services that log fault wording; the first one speaks `fault`'s own wording
    (one of the incident's faults), and about half of those off the edge start mid-window."""
    failing = {f.root.service for f in (fault, stray, *others) if f is not None}
    pool = [s for s in services if s.name not in failing]
    kinds = [kind.id for kind in FAULT_KINDS]
    decoys: list[Decoy] = []
    for i, service in enumerate(rng.sample(pool, min(count, len(pool)))):
        kind = fault.kind if fault is not None and i == 0 else rng.choice(kinds)
        if service.role != "edge" and rng.random() < 0.5:
            decoys.append(Decoy(service.name, kind, max(2.0, lines / 60 * rng.uniform(0.01, 0.025)),
                                start_ms + rng.randrange(16 * _MIN, 40 * _MIN)))
        else:
            decoys.append(Decoy(service.name, kind, max(0.5, lines / 60 * rng.uniform(0.002, 0.006)), start_ms))
    return tuple(decoys)


def plan_mimics(rng: random.Random, services: tuple[Service, ...], faults: tuple[Fault | None, ...],
                taken: set[str], count: int, start_ms: int, end_ms: int, lines: int) -> tuple[Decoy, ...]:
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
        fitting = [kind for kind in FAULT_KINDS if _fits(kind, service, by_name, worker_ok=False)]
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


def plan_herrings(rng: random.Random, services: tuple[Service, ...], fault: Fault | None, stray: Fault | None,
                  start_ms: int, count: int, others: tuple[Fault, ...] = ()) -> tuple[Herring, ...]:
    failing = {f.root.service for f in (fault, stray, *others) if f is not None}
    anchor = fault.root.onset_ms if fault else start_ms + rng.randrange(20 * _MIN, 40 * _MIN)
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
