"""A planned fault's log lines, streamed lazily: its chain's lines, its edges' failed requests, and
the trace ids that tie them.

Three independently seeded parts. Each service of the chain writes its lines at its own rate from
its own generator (`_effect_lines`); each edge receives failed requests at the rate `edge` drew
for it, from the edge's own generator (`_edge_requests`); then each failed request, in the order
they were received, takes a line the root wrote while the edge waited on it and, after that, one
line of each caller on its path (`_Linker`). Linking only hands out trace ids: no line's time,
level or words depend on it, so every count, rise and wording of the chain is independent of what
the edge shows, and only a failed request's trace ties the two together. A request's lines read in
time order: the edge receives it, the root fails, the callers on its way back report it, the edge
answers. A request the root wrote nothing for in time timed out at the edge on its own (its trace
is the edge's two lines); a caller that logged nothing for it in time passed it on silently.
Lines no request took continue their dependency's latest free line (the chain's own requests).

Only a minute or so of lines is held at a time, so a million-line incident streams in little memory.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fault_localisation.background import access_line, request_line
from fault_localisation.catalogue import GRACEFUL, KINDS_BY_ID, Line
from fault_localisation.edge import REQUEST_MS
from fault_localisation.plan import Effect, Fault
from fault_localisation.rng import Rng

if TYPE_CHECKING:
    from fault_localisation.generate import Incident
    from fault_localisation.streams import Row

__all__ = ["Request", "fault_lines", "fault_requests", "users_requests"]

_VERBATIM_SHARE = 0.6
"""Of a verbatim-echoing caller's lines, the share that quote the root's own line unchanged."""
_GATEWAY_STATUS = (500, 502, 503, 504)
"""What an edge answers a request its upstream failed: the status says nothing of the cause."""
_TICK_MS = 30_000
"""Between failed requests, lines are settled and emitted this often."""
_JOIN_MS = 10_000
"""A line no failed request took continues its dependency's request that logged within this long
before it (the callee failed first)."""


@dataclass
class _Line:
    ts: int
    level: str
    service: str
    instance: str
    message: str
    effect: int
    trace: str = ""


@dataclass(frozen=True)
class Request:
    """One failed request an edge received and answered."""

    edge: str
    endpoint: tuple[str, str]
    received_ms: int
    answered_ms: int
    trace: str
    crossed: tuple[str, ...]
    """The services whose lines it carries besides the edge, root first; empty when it timed out
    at the edge before the root wrote anything for it."""


def fault_lines(inc: Incident, fault: Fault, tag: str) -> Iterator[Row]:
    """Every line of the fault, in time order."""
    return _stream(inc, fault, tag, None)


def fault_requests(inc: Incident, fault: Fault, tag: str) -> list[Request]:
    """Every failed request the fault's edges received."""
    requests: list[Request] = []
    for _ in _stream(inc, fault, tag, requests):
        pass
    return requests


def users_requests(inc: Incident) -> frozenset[str]:
    """The trace ids of the users' failed requests to the reported endpoint whose lines show the
    root failing: the requests a report can rest on (empty on a control)."""
    if inc.fault is None:
        return frozenset()
    root = inc.fault.root.service
    return frozenset(
        r.trace
        for r in fault_requests(inc, inc.fault, "fault")
        if r.edge == inc.edge and r.endpoint == inc.endpoint and r.crossed[:1] == (root,)
    )


def _stream(inc: Incident, fault: Fault, tag: str, requests: list[Request] | None) -> Iterator[Row]:
    edges = {s.name for s in inc.services if s.role == "edge"}
    ids = Rng(f"{tag}/{inc.seed}/traces")
    linked = inc.knobs.traces

    def fresh() -> str:
        return f"{ids.getrandbits(64):016x}"

    inner = [iter(()) if e.service in edges else _effect_lines(inc, fault, tag, i) for i, e in enumerate(fault.effects)]
    linker = _Linker(fault, inner, fresh)
    out: list[Row] = [
        (line.ts, line.level, line.service, line.instance, fresh(), line.message) for line in _prelude(inc, fault, tag)
    ]
    heapq.heapify(out)
    arrivals = heapq.merge(
        *(
            _edge_requests(inc, e, i, tag, (e.service != inc.edge, e.service))
            for i, e in enumerate(fault.effects)
            if e.service in edges
        )
    )

    def settled(before: int) -> Iterator[Row]:
        """Every row older than `before` once no later request can take a line before it."""
        for line in linker.settle(before, linked):
            heapq.heappush(out, (line.ts, line.level, line.service, line.instance, line.trace, line.message))
        while out and out[0][0] < before:
            yield heapq.heappop(out)

    tick = inc.start_ms
    for received, _order, answered, status, instance, rid, edge_effect in arrivals:
        while tick < received:  # between requests, keep only the last half minute of lines
            linker.load(tick)
            yield from settled(tick)
            tick += _TICK_MS
        effect = fault.effects[edge_effect]
        assert effect.endpoint is not None
        trace = fresh()
        linker.load(received + REQUEST_MS[1])
        crossed = linker.take(edge_effect, received, answered, trace) if linked else ()
        if requests is not None:
            requests.append(Request(effect.service, effect.endpoint, received, answered, trace, crossed))
        heapq.heappush(out, (received, "DEBUG", effect.service, instance, trace, request_line(effect.endpoint, rid)))
        heapq.heappush(
            out,
            (
                answered,
                "ERROR",
                effect.service,
                instance,
                trace if linked else fresh(),
                access_line(effect.endpoint, rid, status, answered - received),
            ),
        )
        yield from settled(received)  # no later request can take a line before it
    linker.load(inc.end_ms)
    yield from settled(inc.end_ms + 1)


def _prelude(inc: Incident, fault: Fault, tag: str) -> list[_Line]:
    """The root's INFO line on each instance shortly before its onset (a rollout, a config reload)."""
    kind = KINDS_BY_ID[fault.kind]
    if kind.prelude is None:
        return []
    rng = Rng(f"{tag}/{inc.seed}/prelude")
    root = fault.root
    instances = next(s.instances for s in inc.services if s.name == root.service)
    lines = [
        _Line(
            root.onset_ms - rng.randrange(30_000, 120_000),
            kind.prelude.level,
            root.service,
            instance,
            kind.prelude.render(rng, root.service, root.dep),
            -1,
        )
        for instance in instances
    ]
    return [line for line in lines if inc.start_ms <= line.ts < inc.end_ms]


def _effect_lines(inc: Incident, fault: Fault, tag: str, i: int) -> Iterator[_Line]:
    """Effect `i`'s lines in time order, from its own generator: the root's precursor (a fifth of the
    storm's rate, at least one line a minute) then its storm; a caller's symptoms of its dependency."""
    rng = Rng(f"{tag}/{inc.seed}/{i}")
    kind = KINDS_BY_ID[fault.kind]
    by_name = {s.name: s for s in inc.services}
    root, effect = fault.root, fault.effects[i]
    instances = by_name[effect.service].instances
    root_calls = by_name[root.service].calls
    deps = root_calls if fault.kind == "dns_failure" and root_calls else (root.dep,)
    callers = kind.echo if fault.echo else kind.caller
    t, started = float(effect.onset_ms), False
    while t < inc.end_ms:
        line: Line
        if i == 0:
            if t < fault.storm_ms:
                line, step = kind.warning, max(1.0, root.per_min / 5) / 60_000
            else:
                line, step = (kind.root[0] if not started else rng.choice(kind.root)), root.per_min / 60_000
                started = True
            dep = root.dep if line is kind.root[0] else rng.choice(deps)
            level = "WARN" if fault.quiet and line.level == "ERROR" else line.level
            yield _Line(int(t), level, root.service, rng.choice(instances), line.render(rng, root.service, dep), 0)
            after = t + rng.expovariate(step)
            if t < fault.storm_ms < after:
                after = fault.storm_ms
        else:
            line, subject, dep = rng.choice(GRACEFUL if fault.graceful else callers), effect.service, effect.dep
            level = line.level if fault.graceful else "WARN" if effect.warn_only else line.level
            if fault.verbatim and rng.random() < _VERBATIM_SHARE:
                # Passing the root's error text on unchanged: the very line the root writes.
                line, subject, dep = rng.choice(kind.root), root.service, rng.choice(deps)
                level = "WARN" if effect.warn_only else line.level
            yield _Line(int(t), level, effect.service, rng.choice(instances), line.render(rng, subject, dep), i)
            after = t + rng.expovariate(effect.per_min / 60_000)
        t = max(after, int(t) + 1)


def _edge_requests(
    inc: Incident, effect: Effect, index: int, tag: str, order: tuple[bool, str]
) -> Iterator[tuple[int, tuple[bool, str], int, int, str, int, int]]:
    """(received, order, answered, status, instance, request id, effect index) of each failed
    request the edge received: a Poisson stream at `per_min`, ramping up over `ramp_ms` from
    `onset_ms`, from the edge's own generator. `order` breaks ties between edges (the reported
    edge first, for every fault alike)."""
    rng = Rng(f"{tag}/{inc.seed}/edge/{effect.service}")
    instances = next(s.instances for s in inc.services if s.name == effect.service)
    peak = effect.per_min / 60_000
    t = float(effect.onset_ms)
    while True:
        t += rng.expovariate(peak)
        took = rng.randrange(*REQUEST_MS)
        if t + took >= inc.end_ms:
            return
        if effect.ramp_ms and rng.random() * effect.ramp_ms > t - effect.onset_ms:
            continue
        yield (
            int(t),
            order,
            int(t) + took,
            rng.choice(_GATEWAY_STATUS),
            rng.choice(instances),
            rng.randrange(1, 1_000_000),
            index,
        )


class _Linker:
    """Hands the chain's lines to failed requests (one line per service per request, each line to
    one request), then ties the rest into the chain's own requests, holding only recent lines."""

    def __init__(self, fault: Fault, inner: list[Iterator[_Line]], fresh: Callable[[], str]) -> None:
        self.fault = fault
        self.inner = inner
        self.fresh = fresh
        self.index = {e.service: i for i, e in enumerate(fault.effects)}
        self.lines: list[list[_Line]] = [[] for _ in inner]
        self.times: list[list[int]] = [[] for _ in inner]
        self.ahead: list[_Line | None] = [next(it, None) for it in inner]
        self.free: list[deque[_Line]] = [deque() for _ in inner]

    def load(self, until: int) -> None:
        """Read every effect's lines up to `until`."""
        for j, it in enumerate(self.inner):
            line = self.ahead[j]
            while line is not None and line.ts <= until:
                self.lines[j].append(line)
                self.times[j].append(line.ts)
                line = next(it, None)
            self.ahead[j] = line

    def path(self, i: int) -> list[int]:
        """The effects from the root up to the one the edge effect `i` calls, root first."""
        path: list[int] = []
        j = self.index[self.fault.effects[i].dep]
        while True:
            path.append(j)
            if j == 0:
                return path[::-1]
            j = self.index[self.fault.effects[j].dep]

    def take(self, i: int, received: int, answered: int, trace: str) -> tuple[str, ...]:
        """Give `trace` to a root line in (received, answered) and, after it, to one line of each
        caller on the path in time order; nothing when the root wrote no free line in time."""
        after, taken = received, []
        for j in self.path(i):
            times, lines = self.times[j], self.lines[j]
            k = bisect.bisect_right(times, after)
            while k < len(times) and times[k] < answered and lines[k].trace:
                k += 1
            if k < len(times) and times[k] < answered:
                taken.append(lines[k])
                after = times[k]
            elif j == 0:
                return ()
        for line in taken:
            line.trace = trace
        return tuple(line.service for line in taken)

    def settle(self, before: int, linked: bool) -> list[_Line]:
        """Every held line older than `before`, its trace final: a line no request took continues
        its dependency's latest free line within `_JOIN_MS` (each at most once), else its own."""
        done: list[_Line] = []
        for j in range(len(self.lines)):
            k = bisect.bisect_left(self.times[j], before)
            done += self.lines[j][:k]
            del self.lines[j][:k], self.times[j][:k]
        done.sort(key=lambda line: line.ts)
        for line in done:
            if not line.trace:
                if linked and line.effect > 0:
                    below = self.free[self.index[self.fault.effects[line.effect].dep]]
                    while below and below[0].ts < line.ts - _JOIN_MS:
                        below.popleft()
                    for k in range(len(below) - 1, -1, -1):
                        if below[k].ts < line.ts:
                            line.trace = below[k].trace
                            del below[k]
                            break
                line.trace = line.trace or self.fresh()
                self.free[line.effect].append(line)
        for free in self.free:
            while free and free[0].ts < before - _JOIN_MS:
                free.popleft()
        return done
