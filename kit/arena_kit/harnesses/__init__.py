"""Arena's own harness ids: verifiers' harnesses with a rollout-cost fix each, loaded by id like any harness."""

from arena_kit.harnesses.codex import ArenaCodexHarness

__all__ = ["ArenaCodexHarness"]
