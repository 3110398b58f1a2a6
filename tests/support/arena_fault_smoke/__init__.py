"""A many-task taskset for fault tests: each task asks for one file with a fixed text."""

from arena_fault_smoke.taskset import FaultSmokeTaskset

__all__ = ["FaultSmokeTaskset"]
