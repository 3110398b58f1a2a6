"""Pure, seeded incident generator: a topology, background logs, one fault that reaches users (or
none), and what misleads: look-alikes (benign chronic wording, or a root's own lines verbatim), a
stray fault that never reaches users, herrings.

`generate(seed, knobs)` only plans (cheap); `Incident.rows()` streams the log lazily in time order
by merging independently seeded streams, so a 1M-line incident never sits in memory and any
incident replays byte for byte. Each difficulty mechanism has a knob; `mechanism_mix` reports how
often each one occurs over a split.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from fault_localisation.distractors import Decoy, Herring, plan_decoys, plan_herrings, plan_mimics, plan_stray
from fault_localisation.fault_stream import fault_lines
from fault_localisation.plan import Effect, Fault, Mechanisms, plan_cascades
from fault_localisation.rng import Rng
from fault_localisation.streams import Row, background, decoy_lines, herring_lines, periodic
from fault_localisation.topology import Service, build_topology

__all__ = [
    "DIFFICULTIES",
    "MAX_TWINS",
    "MECHANISMS",
    "PRESETS",
    "SPLITS",
    "WINDOW_MIN",
    "Decoy",
    "Effect",
    "Fault",
    "Herring",
    "Incident",
    "Knobs",
    "Label",
    "Row",
    "generate",
    "iso",
    "mechanism_mix",
    "preset",
    "split_seeds",
]

WINDOW_MIN = 60
CONTROL_RATE = 0.05
"""Share of incidents whose reported endpoint fails no more than usual (the answer is "none")."""
SPLITS = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
"""First seed of each split; a split holds up to 1,000,000 seeds."""
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
MECHANISMS = (
    "control",
    "twins",
    "shared_trigger",
    "decoys",
    "decoy_rise",
    "mimic_chronic",
    "mimic_burst",
    "echo",
    "verbatim_echo",
    "callers_first",
    "quiet_root",
    "precursor",
    "off_path",
    "off_path_earlier",
    "stray_graceful",
    "traces",
)
"""What `Incident.mechanisms` can report."""


@dataclass(frozen=True)
class Knobs:
    """Generation knobs. The defaults are the documented mix; each mechanism has its own knob so a
    difficulty table can switch one at a time."""

    services: int = 36
    lines: int = 20_000
    """Approximate number of log lines in the whole incident window."""
    red_herrings: int = 2
    decoys: int = 3
    """Healthy services that log fault wording (the first one the users' fault's own): all hour, or,
    for about half of those off the edge, loudly from a batch job's start mid-window."""
    mimics: int = 3
    """Healthy inner services on the users' side that write a fault kind's own root and precursor
    lines verbatim (same templates, same numbers): half sparsely all hour, half in a mid-window
    burst as loud as a root's storm whose callers stay healthy."""
    echo: float = 0.7
    """Chance that callers quote the root's error text, sharing its wording."""
    verbatim_echo: float = 0.5
    """Chance that echoing callers also pass the root's own lines on verbatim (most of their lines)."""
    callers_first: float = 0.6
    """Chance that the root's callers log their symptom before the root logs anything."""
    quiet_root: float = 0.4
    """Chance that the root never logs ERROR (its storm is WARN only)."""
    precursor: float = 0.5
    """Chance that the root's first anomalous line is a sparse WARN 2-6 minutes before its storm."""
    off_path: float = 0.5
    """Chance of a stray real fault that never reaches users (usually starting first)."""
    stray_reachable: float = 0.7
    """Chance that the stray strikes an inner service on the users' side whose callers degrade
    gracefully (retries, a local copy), rather than one no edge depends on."""
    traces: bool = True
    """A request's lines share one trace id across services; off, every line has its own."""
    twins: int = 6
    """Concurrent real faults besides the users' one, each failing another endpoint of the edge
    users reported: drawn exactly like the users' fault, so no aggregate tells which is theirs."""
    shared_trigger: float = 1.0
    """Chance that every fault of the incident starts within two minutes of one moment (a zone
    outage, a fleet-wide config push), so onsets do not tell them apart either."""


DIFFICULTIES = ("easy", "medium", "hard")
PRESETS: dict[str, dict[str, int | float | bool]] = {
    "easy": {"services": 20, "twins": 0, "shared_trigger": 0.0, "mimics": 1, "decoys": 2, "off_path": 0.3},
    "medium": {"services": 24, "twins": 2, "shared_trigger": 0.5},
    "hard": {},
}
"""Each difficulty tier's knobs that differ from `Knobs()` (the `hard` default mix the gate runs on):
`easy` has one fault and fewer look-alikes, so aggregates point at the root; `medium` two concurrent
faults; `hard` up to six beside the users' one, started by one trigger."""


def preset(difficulty: str, **overrides: int | float | bool) -> Knobs:
    """The knobs of a difficulty tier, with `overrides` on top."""
    if difficulty not in PRESETS:
        raise ValueError(f"difficulty must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
    knobs: dict[str, Any] = {**PRESETS[difficulty], **overrides}  # replace() checks the names at run time
    return replace(Knobs(), **knobs)


@dataclass(frozen=True)
class Label:
    """The held-out answer."""

    service: str
    """The root-cause service, or "none" on a no-fault control."""
    fault_kind: str
    """A catalogue id, or "none"."""


@dataclass(frozen=True)
class Incident:
    seed: int
    knobs: Knobs
    start_ms: int
    end_ms: int
    services: tuple[Service, ...]
    fault: Fault | None
    herrings: tuple[Herring, ...]
    stray: Fault | None = None
    """A real fault off the users' path; never the answer."""
    decoys: tuple[Decoy, ...] = ()
    mimics: tuple[Decoy, ...] = ()
    """Verbatim look-alikes: healthy services writing a root's own lines."""
    edge: str = ""
    """The edge service users reported failing requests on."""
    endpoint: tuple[str, str] = ("", "")
    """The endpoint (method, route) users reported; only the users' fault fails it."""
    twins: tuple[Fault, ...] = ()
    """Concurrent real faults failing other endpoints of the same edge; never the answer."""
    shared_trigger: bool = False
    """Whether the faults started together (within 45 s of one trigger)."""
    trigger_ms: int = 0
    """The incident's trigger (the faults' shared start when `shared_trigger`)."""

    @property
    def label(self) -> Label:
        if self.fault is None:
            return Label("none", "none")
        return Label(self.fault.root.service, self.fault.kind)

    @property
    def mechanisms(self) -> frozenset[str]:
        """The difficulty mechanisms present in this incident (names from MECHANISMS)."""
        f = self.fault
        found = {
            "control": f is None,
            "twins": bool(self.twins),
            "shared_trigger": self.shared_trigger and len(self.faults) > 1,
            "decoys": bool(self.decoys),
            "decoy_rise": any(d.start_ms > self.start_ms for d in self.decoys),
            "mimic_chronic": any(d.start_ms == self.start_ms for d in self.mimics),
            "mimic_burst": any(d.start_ms > self.start_ms for d in self.mimics),
            "echo": f is not None and f.echo,
            "verbatim_echo": f is not None and f.verbatim,
            "callers_first": f is not None and f.callers_first,
            "quiet_root": f is not None and f.quiet,
            "precursor": f is not None and f.storm_ms > f.root.onset_ms,
            "off_path": self.stray is not None,
            "off_path_earlier": self.stray is not None and f is not None and self.stray.root.onset_ms < f.root.onset_ms,
            "stray_graceful": self.stray is not None and self.stray.graceful,
            "traces": self.knobs.traces,
        }
        return frozenset(name for name, present in found.items() if present)

    @property
    def faults(self) -> tuple[Fault, ...]:
        """Every real fault reaching the reported edge: the users' one first, then the twins."""
        return (*(() if self.fault is None else (self.fault,)), *self.twins)

    def rows(self) -> Iterator[Row]:
        """Every log line of the window, in time order."""
        fixed = periodic(self)
        streams: list[Iterator[Row]] = [
            background(self, self.knobs.lines - len(fixed) - self._planned_volume()),
            iter(fixed),
        ]
        if self.fault is not None:
            streams.append(fault_lines(self, self.fault, "fault"))
        if self.stray is not None:
            streams.append(fault_lines(self, self.stray, "stray"))
        streams += [fault_lines(self, twin, f"twin{i}") for i, twin in enumerate(self.twins)]
        streams += [decoy_lines(self, d) for d in (*self.decoys, *self.mimics)]
        streams += [herring_lines(self, h) for h in self.herrings if h.kind != "noisy"]
        return heapq.merge(*streams)

    def _planned_volume(self) -> int:
        """Expected number of fault and decoy lines, so that the whole log comes to about `knobs.lines`."""
        total = sum(d.per_min * ((d.end_ms or self.end_ms) - d.start_ms) / 60_000 for d in (*self.decoys, *self.mimics))
        for fault in (self.fault, self.stray, *self.twins):
            if fault is not None:
                # An edge's failed request is two lines (received, answered), its rate ramps up.
                total += sum(
                    (2 if e.endpoint else 1) * e.per_min * max(0, self.end_ms - e.onset_ms - e.ramp_ms / 2) / 60_000
                    for e in fault.effects
                )
        return int(total)


def iso(ms: int) -> str:
    """`2024-03-05T14:03:22.123Z`"""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def split_seeds(split: str, count: int) -> range:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    if not 0 <= count <= 1_000_000:
        raise ValueError(f"a split holds at most 1,000,000 tasks, got {count}")
    return range(SPLITS[split], SPLITS[split] + count)


MAX_TWINS = 6
"""Concurrent faults an incident can hold beside the users' one (each fails its own endpoint)."""


def generate(seed: int, knobs: Knobs = Knobs()) -> Incident:
    if not 0 <= knobs.twins <= MAX_TWINS:
        raise ValueError(f"twins must be between 0 and {MAX_TWINS}, got {knobs.twins}")
    rng = Rng(f"incident/{seed}")
    services = build_topology(rng, knobs.services)
    day = _EPOCH + timedelta(days=rng.randrange(730), hours=rng.randrange(23))
    start_ms = int(day.timestamp() * 1000)
    end_ms = start_ms + WINDOW_MIN * 60_000
    odds = Mechanisms(
        knobs.echo, knobs.callers_first, knobs.quiet_root, knobs.precursor, knobs.off_path, knobs.verbatim_echo
    )
    control = rng.random() < CONTROL_RATE
    cascades = plan_cascades(
        rng,
        services,
        start_ms,
        end_ms,
        knobs.lines,
        odds,
        control,
        knobs.twins,
        knobs.shared_trigger,
        lambda slot, edge: Rng(f"edge/{seed}/{slot}/{edge}"),
    )
    fault, twins = cascades.fault, cascades.twins
    failing = tuple(f for f in (fault, *twins) if f is not None)
    # Drawn from their own generators, so switching one mechanism leaves the rest of the incident as it was.
    stray_rng = Rng(f"stray/{seed}")
    stray = (
        plan_stray(stray_rng, services, failing, start_ms, cascades.trigger_ms, knobs.lines, knobs.stray_reachable)
        if stray_rng.random() < knobs.off_path
        else None
    )
    # The look-alikes copy one of the faults, the users' or a concurrent one alike, so copying does
    # not single the users' fault out either.
    echoed = Rng(f"echoed/{seed}").choice(failing) if failing else None
    decoys = plan_decoys(Rng(f"decoys/{seed}"), services, echoed, stray, knobs.decoys, start_ms, knobs.lines, failing)
    mimics = plan_mimics(
        Rng(f"mimics/{seed}"),
        services,
        (echoed, *failing, stray),
        {d.service for d in decoys},
        knobs.mimics,
        start_ms,
        end_ms,
        knobs.lines,
    )
    herrings = plan_herrings(
        Rng(f"herrings/{seed}"),
        services,
        (*failing, *([stray] if stray else [])),
        cascades.trigger_ms,
        knobs.red_herrings,
    )
    return Incident(
        seed,
        knobs,
        start_ms,
        end_ms,
        services,
        fault,
        herrings,
        stray,
        decoys,
        mimics,
        cascades.edge,
        cascades.endpoint,
        twins,
        cascades.shared,
        cascades.trigger_ms,
    )


def mechanism_mix(split: str, count: int, knobs: Knobs = Knobs()) -> dict[str, int]:
    """How many of the split's first `count` incidents carry each mechanism (planning only: cheap)."""
    counts = Counter(m for seed in split_seeds(split, count) for m in generate(seed, knobs).mechanisms)
    return {name: counts.get(name, 0) for name in MECHANISMS}
