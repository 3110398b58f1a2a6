"""What an edge shows of a fault, drawn before and apart from the fault's hidden chain.

An edge's view of a fault is when one of its endpoints starts failing, how fast the failures rise
and how many a minute it fails, and each failed request's duration and status. Every draw here
comes from a generator keyed by the fault's slot and the edge alone, and takes nothing from the
chain (its root, depth, path, precursor, callers-first or quiet draws): that is what makes the
reported endpoint's timing independent of which chain is the users' by construction. The hidden
chain is then fitted to it (`fault_stream`): a failed request picks up lines the chain's services
write anyway, so no count anywhere moves with the edge's draws.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["EDGE_LAG_MS", "REQUEST_MS", "EdgeTiming", "draw_edge_timing"]

_MIN = 60_000
EDGE_LAG_MS = (20_000, 10 * _MIN)
"""Users see failures at the edge this long after the faults' trigger window closed (retries, a
circuit breaker still closed, cached answers)."""
_RAMP_MS = 4 * _MIN
"""An endpoint's failures reach their full rate within this long of their first one."""
_RATE = (0.003, 0.006)
"""An endpoint's failed requests a minute, as a share of the log's lines a minute."""
REQUEST_MS = (15_000, 60_000)
"""How long a failed request takes at the edge, from receiving it to answering it (timeouts)."""


@dataclass(frozen=True)
class EdgeTiming:
    """One edge's view of one fault."""

    onset_ms: int
    """When the endpoint's first failure may be answered."""
    per_min: float
    """Failed requests a minute at full rate."""
    ramp_ms: int
    """The rate rises linearly from 0 to `per_min` over this long."""


def draw_edge_timing(rng: random.Random, after_ms: int, end_ms: int, lines: int, floor: float) -> EdgeTiming:
    """An edge's view of a fault whose root is failing by `after_ms` (the trigger window's end):
    users see it from 20 s to 12 min later, early enough to fail for the window's last ten
    minutes. `floor` is the least rate a fault of this incident gets (the same for all of them)."""
    lag = rng.randrange(*EDGE_LAG_MS)
    per_min = max(floor, lines / 60 * rng.uniform(*_RATE))
    ramp = rng.randrange(0, _RAMP_MS)
    onset = min(after_ms + lag, max(after_ms + EDGE_LAG_MS[0], end_ms - 10 * _MIN))
    return EdgeTiming(onset, per_min, ramp)
