"""What one benchmark run measures: the configurations (runtime × harness × environment × toolset
placement), the concurrency levels and how many rollouts each level runs.

A level runs `max(rollouts, level)` rollouts, so every level fills its concurrency at least once.
Combinations verifiers refuses (claude_code or codex on the subprocess runtime) are skipped with
the reason, not run; the bench taskset's toolset placement is the only placement knob, since a
real environment decides its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from arena.choices import HARNESSES, Harness

__all__ = [
    "BENCH_ENV",
    "BENCH_MODEL",
    "QUICK",
    "BenchConfig",
    "Combo",
    "Harness",
    "Placement",
    "RuntimeType",
]

RuntimeType = Literal["docker", "subprocess", "prime"]
Placement = Literal["shared", "task"]

BENCH_ENV = "arena-bench"
"""The bench's own taskset (runtime_bench/bench_taskset/arena_bench)."""
BENCH_MODEL = "arena/bench"
"""The model name the bench's scripted policy is served under."""
CONTAINER_HARNESSES = ("claude_code", "codex")
"""Harnesses verifiers refuses on the subprocess runtime (NEEDS_CONTAINER)."""


def skip_reason(runtime: str, harness: str) -> str | None:
    if runtime == "subprocess" and harness in CONTAINER_HARNESSES:
        return f"{harness} refuses the subprocess runtime (NEEDS_CONTAINER); bench it on docker"
    return None


@dataclass(frozen=True)
class Combo:
    """One configuration: where rollouts run, which harness, which taskset, where its tools run."""

    runtime: RuntimeType
    harness: Harness
    environment: str
    toolset: str
    """`shared`, `task`, or `env` (the environment decides)."""

    @property
    def label(self) -> str:
        return f"{self.runtime}/{self.harness}/{self.environment}/{self.toolset}"

    @property
    def slug(self) -> str:
        return f"{self.runtime}-{self.harness}-{self.toolset}".replace("_", "")


class BenchConfig(BaseModel):
    """One benchmark run. Every field has a default; `QUICK` is the few-minute preset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runtimes: list[RuntimeType] = Field(default=["docker"])
    """Runtimes to bench. `subprocess` is the no-container baseline (bash only); `prime` needs
    PRIME_API_KEY and a pullable image."""
    harnesses: list[Harness] = Field(default=list(HARNESSES))
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

    @model_validator(mode="after")
    def _something_runs(self) -> BenchConfig:
        if not self.combos():
            raise ValueError(
                f"no runnable configuration: runtimes {self.runtimes} × harnesses {self.harnesses} "
                "(claude_code and codex need a container runtime; add --runtime docker)"
            )
        return self

    def rollouts_at(self, level: int) -> int:
        return max(self.rollouts, level)

    def combos(self) -> list[Combo]:
        """The configurations to run, in report order."""
        placements: list[str] = list(self.toolsets) if self.environment == BENCH_ENV else ["env"]
        return [
            Combo(runtime, harness, self.environment, placement)
            for runtime in self.runtimes
            for harness in self.harnesses
            for placement in placements
            if skip_reason(runtime, harness) is None
        ]

    def skipped(self) -> list[dict[str, str]]:
        """Requested combinations that will not run, each with why."""
        return [
            {"runtime": runtime, "harness": harness, "reason": reason}
            for runtime in self.runtimes
            for harness in self.harnesses
            if (reason := skip_reason(runtime, harness)) is not None
        ]

    def image_for(self, runtime: RuntimeType) -> str | None:
        if self.image:
            return self.image
        if runtime == "docker":
            return "arena/harness:latest" if self.environment == BENCH_ENV else f"arena/{self.environment}:latest"
        return None

    def model_name(self) -> str:
        if self.model:
            return self.model
        return BENCH_MODEL if self.environment == BENCH_ENV else f"arena/{self.environment}/oracle"


QUICK = BenchConfig(harnesses=["bash", "arena-bash"], levels=[1, 4, 8], rollouts=8)
"""`arena bench --quick`: bash on docker, shared toolset, levels 1, 4 and 8 (the goals use 1 and 8), 8 rollouts each."""
