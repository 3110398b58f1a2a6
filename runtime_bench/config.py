"""What one benchmark run measures: the configurations (runtime × harness × environment × toolset
placement × model latency), the concurrency levels and how many rollouts each level runs.

The docker runtime comes in three paths: `docker` (stock: verifiers' own docker runtime),
`docker-lean` (Arena's `LeanEnv` box over the Engine API) and `docker-pool` (the lean path with its
warm box pool on, `[env] pool = "auto"`), so one run puts them side by side.
A level runs `max(rollouts, level)` rollouts, so every level fills its concurrency at least once.
Combinations verifiers refuses (claude_code or codex on the subprocess runtime) are skipped with
the reason, not run; the bench taskset's toolset placement is the only placement knob, since a
real environment decides its own. `BenchConfig.plan()` decides all of it once, into the `Plan` the
runner and each level's eval read (they never see the config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from arena.choices import HARNESSES, Harness
from runtime_bench.model import Skipped

__all__ = [
    "BENCH_ENV",
    "BENCH_MODEL",
    "CAPACITY",
    "QUICK",
    "BenchConfig",
    "Combo",
    "Harness",
    "Placement",
    "Plan",
    "RuntimeType",
]

RuntimeType = Literal["docker", "docker-lean", "docker-pool", "subprocess", "prime"]
Placement = Literal["shared", "task"]

BENCH_ENV = "arena-bench"
"""The bench's own taskset (runtime_bench/bench_taskset/arena_bench)."""
BENCH_MODEL = "arena/bench"
"""The model name the bench's scripted policy is served under."""
CONTAINER_HARNESSES = ("claude_code", "codex", "arena-codex")
"""Harnesses verifiers refuses on the subprocess runtime (NEEDS_CONTAINER)."""
DOCKER_RUNTIMES = ("docker", "docker-lean", "docker-pool")
LEAN_RUNTIMES = ("docker-lean", "docker-pool")
"""The runtimes on the lean path (`LeanEnv`)."""
PATH_TITLES = {
    "docker": "stock",
    "docker-lean": "lean",
    "docker-pool": "lean+pool",
    "subprocess": "no container",
    "prime": "prime",
}
"""How the report names each runtime's docker path."""


def skip_reason(runtime: str, harness: str, environment: str = BENCH_ENV) -> str | None:
    if runtime == "subprocess" and harness in CONTAINER_HARNESSES:
        return f"{harness} refuses the subprocess runtime (NEEDS_CONTAINER); bench it on docker"
    if runtime == "docker" and environment != BENCH_ENV:
        # Only the bench taskset takes its path as a taskset option; an environment's is `[env] docker`,
        # which Arena's eval request does not write.
        return (
            f"{environment} takes its own docker path (`[env] docker`, lean when it exports LeanEnv), which "
            "the bench cannot switch to stock: bench it as docker-lean"
        )
    return None


@dataclass(frozen=True)
class Combo:
    """One configuration: where rollouts run, which harness, which taskset, where its tools run."""

    runtime: RuntimeType
    harness: Harness
    environment: str
    toolset: str
    """`shared`, `task`, or `env` (the environment decides)."""
    latency: float = 0.0
    """Seconds the scripted policy waits per model call."""

    @property
    def label(self) -> str:
        base = f"{self.runtime}/{self.harness}/{self.environment}/{self.toolset}"
        return f"{base}@{self.latency:g}s" if self.latency else base

    @property
    def slug(self) -> str:
        base = f"{self.runtime}-{self.harness}-{self.toolset}".replace("_", "")
        return f"{base}-l{self.latency:g}".replace(".", "p") if self.latency else base

    @property
    def docker(self) -> bool:
        return self.runtime in DOCKER_RUNTIMES


class BenchConfig(BaseModel):
    """One benchmark run. Every field has a default; `QUICK` is the few-minute preset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runtimes: list[RuntimeType] = Field(default=["docker", "docker-lean"])
    """Runtimes to bench: `docker` (stock: verifiers' docker runtime), `docker-lean` (Arena's lean
    box; the taskset must export `LeanEnv`), `docker-pool` (the lean box from a warm pool), `subprocess` (the no-container baseline, bash only),
    `prime` (needs PRIME_API_KEY and a pullable image)."""
    harnesses: list[Harness] = Field(default=list(HARNESSES))
    pairs: list[str] | None = None
    """Explicit `runtime/harness` pairs (e.g. `docker/bash`, `docker-lean/arena-bash`) instead of
    the cross product of `runtimes` × `harnesses`."""
    latencies: list[float] = Field(default_factory=lambda: [0.0])
    """Seconds the scripted policy waits per model call (server-side, asleep: no CPU); each
    latency is its own configuration."""
    sweep: int = Field(default=1000, ge=1)
    """N of the capacity table's projected wall time of a sweep of N rollouts."""
    environment: str = BENCH_ENV
    """Verifiers taskset id. Anything but `arena-bench` must be installed and have at least
    `rollouts` tasks; its policy defaults to `arena/<id>/oracle`."""
    toolsets: list[Placement] = Field(default=["shared"])
    """MCP server placement for `arena-bench`: `shared` (one per eval) and/or `task` (one per rollout)."""
    levels: list[int] = Field(default_factory=lambda: [1, 2, 4, 8, 16, 32])
    """Concurrency levels (rollouts in flight), ascending."""
    rollouts: int = Field(default=16, ge=1)
    """Rollouts per level (K); a level runs max(K, level) so it fills its concurrency."""
    image: str | None = None
    """Container image; None: `arena/harness:latest` for arena-bench, `arena/<env>:latest` for
    another environment, verifiers' default on prime."""
    model: str | None = None
    """Model (policy) name; None: the bench script for arena-bench, `arena/<env>/oracle` otherwise."""
    output_dir: Path | None = None
    """Where the report and the runs go; None: `outputs/bench-<stamp>`."""
    floor: bool = True
    """Measure the `docker run` / `docker exec` floor at each level (docker runtime only)."""
    rollout_timeout: float = Field(default=300.0, gt=0)
    """Seconds one rollout's setup, and separately its agent, may take before verifiers stops it."""

    @field_validator("levels")
    @classmethod
    def _levels_ascend(cls, levels: list[int]) -> list[int]:
        if not levels or any(level < 1 for level in levels):
            raise ValueError(f"levels must be positive integers, got {levels}")
        return sorted(set(levels))

    @field_validator("runtimes", "harnesses", "toolsets")
    @classmethod
    def _not_empty(cls, values: list[str]) -> list[str]:
        if not values:
            raise ValueError("give at least one value")
        return list(dict.fromkeys(values))

    @field_validator("latencies")
    @classmethod
    def _latencies(cls, values: list[float]) -> list[float]:
        if not values or any(v < 0 for v in values):
            raise ValueError(f"latencies must be seconds ≥ 0, at least one, got {values}")
        return list(dict.fromkeys(values))

    @field_validator("pairs")
    @classmethod
    def _pairs(cls, values: list[str] | None) -> list[str] | None:
        if values is None:
            return None
        runtimes, harnesses = get_args(RuntimeType), HARNESSES
        for pair in values:
            runtime, _, harness = pair.partition("/")
            if runtime not in runtimes or harness not in harnesses:
                raise ValueError(
                    f"pair {pair!r} is not runtime/harness (runtimes {', '.join(runtimes)}; "
                    f"harnesses {', '.join(harnesses)})"
                )
        if not values:
            raise ValueError("give at least one runtime/harness pair")
        return list(dict.fromkeys(values))

    @model_validator(mode="after")
    def _something_runs(self) -> BenchConfig:
        if not self.plan().combos:
            raise ValueError(
                f"no runnable configuration: {_requested(self.pairs, self.runtimes, self.harnesses)} "
                "(claude_code and codex need a container runtime; add --runtime docker)"
            )
        return self

    def plan(self) -> Plan:
        """What this run does, decided once: what runs and what is skipped, the images, the policy."""
        requested = _requested(self.pairs, self.runtimes, self.harnesses)
        placements: list[str] = list(self.toolsets) if self.environment == BENCH_ENV else ["env"]
        combos = tuple(
            Combo(runtime, harness, self.environment, placement, latency)
            for latency in self.latencies
            for runtime, harness in requested
            for placement in placements
            if skip_reason(runtime, harness, self.environment) is None
        )
        bench = self.environment == BENCH_ENV
        docker_image = self.image or ("arena/harness:latest" if bench else f"arena/{self.environment}:latest")
        docker = any(combo.docker for combo in combos)
        return Plan(
            combos=combos,
            skipped=tuple(
                Skipped(runtime=runtime, harness=harness, reason=reason)
                for runtime, harness in requested
                if (reason := skip_reason(runtime, harness, self.environment)) is not None
            ),
            levels=tuple(self.levels),
            rollouts=self.rollouts,
            rollouts_at={level: max(self.rollouts, level) for level in self.levels},
            latencies=tuple(self.latencies),
            sweep=self.sweep,
            environment=self.environment,
            bench=bench,
            model=self.model or (BENCH_MODEL if bench else f"arena/{self.environment}/oracle"),
            images={combo.runtime: docker_image if combo.docker else self.image for combo in combos},
            docker_image=docker_image if docker else None,
            floor=self.floor and docker,
            rollout_timeout=self.rollout_timeout,
            output_dir=self.output_dir,
            settings=self.model_dump(mode="json"),
        )


def _requested(
    pairs: list[str] | None, runtimes: list[RuntimeType], harnesses: list[Harness]
) -> list[tuple[RuntimeType, Harness]]:
    if pairs is not None:
        return [cast(tuple[RuntimeType, Harness], tuple(pair.split("/", 1))) for pair in pairs]
    return [(runtime, harness) for runtime in runtimes for harness in harnesses]


@dataclass(frozen=True)
class Plan:
    """What one bench run does, decided once from its `BenchConfig` (`BenchConfig.plan`): the runner and
    each level's eval read this, never the config."""

    combos: tuple[Combo, ...]
    """The configurations that run, in report order."""
    skipped: tuple[Skipped, ...]
    """Requested combinations that will not run, each with why."""
    levels: tuple[int, ...]
    rollouts: int
    """K, the rollouts per level asked for."""
    rollouts_at: Mapping[int, int]
    """Level → the rollouts it runs: max(K, level), so it fills its concurrency at least once."""
    latencies: tuple[float, ...]
    sweep: int
    environment: str
    bench: bool
    """Whether the environment is the bench's own taskset (served only the bench script)."""
    model: str
    """The policy's model name."""
    images: Mapping[str, str | None]
    """Runtime → the image its configurations run (None: the runtime's default)."""
    docker_image: str | None
    """The image of the docker paths (the floor's and the prerequisite check's); None: no configuration runs on docker."""
    floor: bool
    """Measure the `docker run` / `docker exec` floor at each level."""
    rollout_timeout: float
    output_dir: Path | None
    settings: dict[str, Any]
    """The config as given (the report records it)."""


QUICK = BenchConfig(
    pairs=["docker/bash", "docker-lean/arena-bash", "docker-pool/arena-bash"], levels=[1, 8], rollouts=8
)
"""`arena bench --quick`: verifiers' bash on the stock path against arena-bash on the lean path without and
with the warm pool, shared toolset, levels 1 and 8 (the goals'), 8 rollouts each: a few minutes."""
CAPACITY = BenchConfig(
    pairs=["docker-lean/arena-bash", "docker-lean/claude_code", "docker-lean/codex", "docker-pool/arena-bash"],
    latencies=[2.0, 10.0],
    levels=[1, 8, 32],
    rollouts=2,
)
"""`arena bench --capacity`: the three harnesses on the lean path (arena-bash also from the warm pool) at model latencies 2 s and 10 s,
levels 1, 8 and 32, max(2, level) rollouts each (~15-20 minutes on 2 cores: a c=1 rollout at 10 s
latency alone takes over 30 s)."""
