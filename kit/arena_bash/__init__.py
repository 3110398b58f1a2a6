"""The `arena-bash` harness id: verifiers resolves a harness id to a top-level module exporting it."""

from arena_kit.lean.harness import LeanBashHarness

__all__ = ["LeanBashHarness"]
