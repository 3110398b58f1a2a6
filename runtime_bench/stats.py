"""Pure statistics over rollout rows and timed jobs: percentiles, phase summaries, goal ratios.

Everything here is a function of plain numbers and dicts (no clock, no Docker), so the report's
arithmetic is unit-tested on its own. A phase a rollout did not reach (None) is left out of that
phase's summary rather than counted as zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CPU_GOAL",
    "DOCKER_CPU_GOAL",
    "OVERHEAD_GOAL",
    "PHASES",
    "THROUGHPUT_GOAL",
    "best_level",
    "docker_cli_seconds",
    "goal_ratios",
    "percentile",
    "phase_summaries",
    "rollout_row",
    "summarize",
    "throughput",
]

PHASES = (
    "boot",
    "setup",
    "agent_model",
    "agent_harness",
    "finalize",
    "scoring",
    "teardown",
    "total",
    "overhead",
)
"""Per-rollout spans, in seconds. `teardown` runs from the end of scoring until the rollout's
container is destroyed; `total` from boot start to that point (with the warm pool: from the box's
claim to the end of scoring, since the pool removes the box off the critical path); `overhead` is `total` minus
`agent_model`, the infrastructure's share of the rollout."""

OVERHEAD_GOAL = 1.5
"""Infrastructure overhead per rollout at concurrency 1, as a multiple of `docker run` (at most)."""
THROUGHPUT_GOAL = 0.6
"""Rollouts per second at concurrency 8, as a fraction of `docker run`'s jobs per second (at least)."""
CPU_GOAL = 0.8
"""CPU-seconds per rollout, everything counted (at most; the lean bash path's goal)."""
DOCKER_CPU_GOAL = 0.6
"""Docker-side CPU-seconds per rollout: dockerd + containerd + docker CLI (at most; claude_code's and codex's goal)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default).

    Raises:
        ValueError: `values` is empty or `q` is outside 0..100.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values: Iterable[float | None]) -> dict[str, float | int | None]:
    """`{n, p50, p95, max, mean}` of the non-None values (all None but n=0 when there are none)."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}
    return {
        "n": len(present),
        "p50": percentile(present, 50),
        "p95": percentile(present, 95),
        "max": max(present),
        "mean": sum(present) / len(present),
    }


def _span(timing: Mapping[str, Any], name: str) -> float | None:
    span = timing.get(name) or {}
    start, end = span.get("start"), span.get("end")
    if not start or not end:
        return None
    return max(0.0, float(end) - float(start))


def rollout_row(
    timing: Mapping[str, Any],
    destroyed_at: float | None = None,
    created_at: float | None = None,
    claim: Mapping[str, Any] | None = None,
) -> dict[str, float | None]:
    """One rollout's phases in seconds, from a trace's `timing` and its container's create and destroy times.

    Without a destroy time (subprocess runtime, or no container event seen) the rollout ends at
    its last recorded span end, and `teardown` is None. A container created before the trace's
    `boot` began (the lean path's env starts the box before the agent's boot) moves the rollout's
    start, and `boot`'s, back to its creation, so both docker paths count the box's start.

    A rollout of a warm-pool eval (`claim`: the trace's `arena_box` info) starts when it began to
    claim its box (its box may have been created long before, while nothing waited for it) and
    ends at its last span: the pool removes the box in the background, so `teardown` (still
    reported) is off the rollout's critical path and out of `total`.
    """
    agent = timing.get("agent") or {}
    row: dict[str, float | None] = {
        "boot": _span(timing, "boot"),
        "setup": _span(timing, "setup"),
        "agent_model": (agent.get("model") or {}).get("duration"),
        "agent_harness": (agent.get("harness") or {}).get("duration"),
        "finalize": _span(timing, "finalize"),
        "scoring": _span(timing, "scoring"),
    }
    start = (timing.get("boot") or {}).get("start")
    claimed = (claim or {}).get("claim_start")
    if claimed and start:
        start = min(float(claimed), float(start))
        boot_end = (timing.get("boot") or {}).get("end")
        row["boot"] = max(0.0, float(boot_end) - start) if boot_end else None
    elif created_at and start and created_at < start:
        start = created_at
        boot_end = (timing.get("boot") or {}).get("end")
        row["boot"] = max(0.0, float(boot_end) - created_at) if boot_end else None
    ends = [(timing.get(name) or {}).get("end") for name in ("boot", "setup", "agent", "finalize", "scoring")]
    last = max((e for e in ends if e), default=None)
    row["teardown"] = max(0.0, destroyed_at - last) if destroyed_at and last else None
    end = destroyed_at if destroyed_at and last and not claimed else last
    row["total"] = max(0.0, end - start) if start and end else None
    model = row["agent_model"] or 0.0
    row["overhead"] = None if row["total"] is None else max(0.0, row["total"] - model)
    row["start"], row["end"] = start, end
    return row


def phase_summaries(rows: Sequence[Mapping[str, float | None]]) -> dict[str, dict[str, float | int | None]]:
    """`summarize` of every phase in `PHASES` across rollout rows."""
    return {phase: summarize(row.get(phase) for row in rows) for phase in PHASES}


def throughput(count: int, seconds: float | None) -> float | None:
    """Jobs per second, or None when nothing ran or no time passed."""
    if not count or not seconds or seconds <= 0:
        return None
    return count / seconds


def goal_ratios(
    overhead_c1: float | None,
    floor_run_c1: float | None,
    throughput_c8: float | None,
    floor_throughput_c8: float | None,
    cpu_per_rollout: float | None = None,
    docker_cpu_per_rollout: float | None = None,
) -> dict[str, Any]:
    """The goals, the first two as ratios against the `docker run` floor, with whether each is met.

    `overhead_ratio` = p50 infrastructure overhead per rollout at concurrency 1 ÷ p50 `docker run`
    at concurrency 1 (goal ≤ 1.5); `throughput_ratio` = rollouts/s at concurrency 8 ÷ `docker run`
    jobs/s at concurrency 8 (goal ≥ 0.6); CPU-s per rollout (goal ≤ 0.8) and its docker side
    (goal ≤ 0.6) as measured. A ratio or figure is None when a side was not measured.
    """
    overhead = overhead_c1 / floor_run_c1 if overhead_c1 is not None and floor_run_c1 else None
    rate = throughput_c8 / floor_throughput_c8 if throughput_c8 is not None and floor_throughput_c8 else None
    return {
        "cpu_per_rollout": cpu_per_rollout,
        "cpu_goal": CPU_GOAL,
        "cpu_met": None if cpu_per_rollout is None else cpu_per_rollout <= CPU_GOAL,
        "docker_cpu_per_rollout": docker_cpu_per_rollout,
        "docker_cpu_goal": DOCKER_CPU_GOAL,
        "docker_cpu_met": None if docker_cpu_per_rollout is None else docker_cpu_per_rollout <= DOCKER_CPU_GOAL,
        "overhead_ratio": overhead,
        "overhead_goal": OVERHEAD_GOAL,
        "overhead_met": None if overhead is None else overhead <= OVERHEAD_GOAL,
        "throughput_ratio": rate,
        "throughput_goal": THROUGHPUT_GOAL,
        "throughput_met": None if rate is None else rate >= THROUGHPUT_GOAL,
    }


def best_level(rates: Mapping[int, float | None]) -> tuple[int, float] | None:
    """The concurrency with the highest throughput, and that throughput (the lowest level on a tie)."""
    measured = sorted((level, rate) for level, rate in rates.items() if rate)
    return max(measured, key=lambda item: item[1], default=None)


def docker_cli_seconds(
    samples: Sequence[tuple[float, Mapping[int, tuple[str, float]]]], cli: str = "docker"
) -> list[float]:
    """Cumulative CPU-seconds of the `docker` CLI processes a process reaped, per sample.

    Each sample is (reaped_s of the process, {child pid: (comm, own + reaped CPU)} of its live
    children). A process's reaped CPU mixes every child it waited for; the children seen
    alive under another name (tool servers, runners) are taken out with the CPU they last showed,
    so what remains is the docker CLI's (a short-lived non-docker child never seen alive is
    counted as docker: the figure is an upper bound).
    """
    seen: dict[int, tuple[str, float]] = {}
    out: list[float] = []
    for reaped, children in samples:
        for pid, (comm, cpu) in children.items():
            seen[pid] = (comm, cpu)
        gone_other = sum(cpu for pid, (comm, cpu) in seen.items() if pid not in children and comm != cli)
        out.append(max(0.0, reaped - gone_other))
    return out
