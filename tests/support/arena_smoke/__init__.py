"""A one-task taskset for harness smoke tests: write a file, optionally call an MCP tool.

`@vf.intercept` denies any shell call whose command contains `ARENA-FORBIDDEN`, so tests can check
the pre-execution gate of each harness.
"""

from arena_kit.envs.lean import LeanEnv
from arena_smoke.taskset import SmokeTaskset

__all__ = ["LeanEnv", "SmokeTaskset"]
