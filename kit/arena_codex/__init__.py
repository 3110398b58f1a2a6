"""The `arena-codex` harness id: verifiers' codex harness without codex-acp's 2 s wait at shutdown."""

from arena_kit.harnesses.codex import ArenaCodexHarness

__all__ = ["ArenaCodexHarness"]
