"""The lean `bash` harness: verifiers' bash loop and wire, run in the box on the stdlib alone.

Exports the harness class via `__all__` (one Harness subclass), so a module that re-exports it is a
verifiers harness plugin (`[env.agent.harness] id = "arena-bash"` resolves the module `arena_bash`).
"""

from arena_kit.lean.harness import HARNESS_ID, LeanBashHarness

__all__ = ["HARNESS_ID", "LeanBashHarness"]
