"""The fault-smoke taskset on the lean docker path: the same tasks, run by `LeanEnv` in lean boxes."""

from arena_fault_smoke.taskset import FaultSmokeTaskset
from arena_kit.envs.lean import LeanEnv

__all__ = ["FaultSmokeTaskset", "LeanEnv"]
