"""The `arena-bash` harness id: verifiers resolves a harness id to a top-level module exporting it."""

from arena_kit.harnesses.arena_bash.harness import LeanBashHarness

__all__ = ["LeanBashHarness"]
