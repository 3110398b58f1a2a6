"""The bench report's types: what the runner, the floor and each level hand to the report, and what
`report.json` holds, so a saved report re-loads (`BenchReport.model_validate_json`) and re-renders.

Fields a phase or a side did not measure are None, never zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BenchReport",
    "Capacity",
    "ConfigResult",
    "Cpu",
    "Failure",
    "FloorLevel",
    "Goal",
    "JobStats",
    "LevelResult",
    "Meta",
    "ReportPaths",
    "Skipped",
    "Summary",
    "Totals",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Summary(_Model):
    """`n, p50, p95, max, mean` of the values measured (all None but n=0 when there were none)."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None
    mean: float | None = None


class Cpu(_Model):
    """CPU-seconds of one level, and per rollout (vf-eval's start-up left out of the latter)."""

    containers_s: float | None = None
    eval_process_s: float | None = None
    eval_startup_s: float | None = None
    daemon_s: float | None = None
    per_rollout_s: float | None = None
    containers_per_rollout_s: float | None = None
    docker_cli_s: float | None = None
    """The docker CLI calls vf-eval reaped during the rollouts (an upper bound; see `stats.docker_cli_seconds`)."""
    docker_side_per_rollout_s: float | None = None
    """The docker side (`Meta.docker_side`; machine-wide) + the docker CLI calls, per rollout."""


class Failure(_Model):
    task: str
    stop: str | None
    error: str


class LevelResult(_Model):
    """One configuration at one concurrency level."""

    level: int
    rollouts: int
    completed: int
    failures: int
    failure_details: list[Failure] = Field(default_factory=list)
    leaked: int = 0
    leaked_names: list[str] = Field(default_factory=list)
    run: str = ""
    run_dir: str = ""
    phases: dict[str, Summary]
    window_s: float | None = None
    throughput: float | None = None
    """Successful rollouts per second over the window from the first boot to the last destroy."""
    eval_wall_s: float | None = None
    startup_s: float | None = None
    cpu: Cpu = Field(default_factory=Cpu)
    containers: int = 0
    peak_mib: Summary = Field(default_factory=Summary)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    """One per rollout: its phases (`runtime_bench.stats.rollout_row`), container, CPU, peak, turns, ok."""


class JobStats(_Model):
    """One floor job (`docker run` or `docker exec`) run `jobs` times at one concurrency."""

    jobs: int
    wall: Summary
    throughput: float | None
    failures: int
    errors: list[str] = Field(default_factory=list)
    cpu_per_job_s: float | None = None
    elapsed_s: float | None = None


class FloorLevel(_Model):
    level: int
    run: str = ""
    docker_run: JobStats
    docker_exec: JobStats
    containers: int = 0
    container_cpu_s: float | None = None
    leaked: int = 0
    leaked_names: list[str] = Field(default_factory=list)


class ConfigResult(_Model):
    label: str
    runtime: str = ""
    latency: float = 0.0
    harness: str = ""
    environment: str = ""
    toolset: str = ""
    image: str | None = None
    levels: list[LevelResult]


class Goal(_Model):
    """The goals of one configuration: two ratios against the `docker run` floor and two CPU
    figures (see `runtime_bench.stats.goal_ratios`)."""

    label: str
    harness: str = ""
    path: str = ""
    """`stock`, `lean`, … (`runtime_bench.config.PATH_TITLES`)."""
    latency: float = 0.0
    cpu_level: int | None = None
    """The level the CPU figures come from (8, else the highest measured)."""
    cpu_per_rollout: float | None = None
    cpu_goal: float = 0.8
    cpu_met: bool | None = None
    docker_cpu_per_rollout: float | None = None
    docker_cpu_goal: float = 0.6
    docker_cpu_met: bool | None = None
    overhead_ratio: float | None
    overhead_goal: float
    overhead_met: bool | None
    throughput_ratio: float | None
    throughput_goal: float
    throughput_met: bool | None


class Capacity(_Model):
    """What one harness on one path costs at one model latency, for planning a sweep."""

    label: str
    harness: str
    path: str
    latency: float
    best_level: int | None
    """The concurrency that maximised throughput on this machine."""
    best_throughput: float | None
    cpu_per_rollout: float | None
    """CPU-s per rollout at the best level."""
    docker_cpu_per_rollout: float | None
    peak_mib: float | None
    """The largest peak memory of one rollout's container, over every level."""
    startup_s: float | None
    """vf-eval's start-up at the best level (launch to first boot)."""
    sweep: int
    projected_s: float | None
    """sweep ÷ best throughput + start-up: the wall time of a sweep of `sweep` rollouts."""


class Skipped(_Model):
    runtime: str
    harness: str
    reason: str


class Totals(_Model):
    rollouts: int
    failures: int
    leaked: int


class Meta(_Model):
    """The host and the run, printed in the report's header."""

    bench_id: str = ""
    started: str | None = None
    cpus: int | None = None
    memory_gib: float | None = None
    platform: str | None = None
    cgroup: str | None = None
    docker_version: str | None = None
    docker_side: str | None = None
    """What the docker-side CPU counts (`runtime_bench.docker_side.scope`)."""
    load_before: str | None = None
    load_after: str | None = None
    gauge_before_s: float | None = None
    """CPU-s this host spent on `runner.GAUGE_LOOP` pure-Python additions, before the run (lower: a faster host)."""
    gauge_after_s: float | None = None
    """The same after the run. CPU-s figures of two runs compare only at like gauges: on a shared VM the same
    work can take 70 % more CPU-s from one hour to the next."""
    elapsed_s: float | None = None
    levels: list[int] = Field(default_factory=list)
    rollouts: int | None = None
    model: str | None = None
    latencies: list[float] = Field(default_factory=lambda: [0.0])
    """Seconds the scripted policy waited per model call, one configuration per latency."""
    sweep: int = 1000
    config: dict[str, Any] = Field(default_factory=dict)


class BenchReport(_Model):
    meta: Meta
    floor: list[FloorLevel]
    configs: list[ConfigResult]
    skipped: list[Skipped]
    goals: list[Goal]
    totals: Totals
    capacity: list[Capacity] = Field(default_factory=list)


class ReportPaths(NamedTuple):
    json: Path
    md: Path
    png: Path
    capacity_png: Path
