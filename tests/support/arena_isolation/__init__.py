"""A test-only taskset (verifiers id `arena-isolation`) declaring Arena's isolation defaults, whose
tasks name a role the scripted `arena/isolation` policy plays: `honest` writes the expected file,
any other role attacks its own box. Put tests/support (`arena_testkit.SUPPORT`) on vf-eval's PYTHONPATH. It opts in
to the lean docker path (`LeanEnv`) exactly as the real tasksets do."""

from arena_kit.envs.lean import LeanEnv
from arena_isolation.taskset import IsolationTaskset

__all__ = ["IsolationTaskset", "LeanEnv"]
