"""Closed sets that cross modules (harnesses, task splits), as Literals the CLI derives its choices from.

Kept free of heavy imports: the CLI reads it to build `--help`, which must not pay for verifiers.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["HARNESSES", "SPLITS", "Harness", "Split"]

Harness = Literal["bash", "arena-bash", "claude_code", "codex", "arena-codex"]
"""The harnesses Arena runs: verifiers' own (each has a layer in the `harness` image);
`arena-bash`, Arena's lean runner of verifiers' bash loop (arena_kit.harnesses.arena_bash; same trajectories,
proven by tests/kit/harnesses/arena_bash, ~1/10 of the in-box CPU); `arena-codex`, verifiers' codex harness without
codex-acp's 2 s wait at shutdown (arena_kit.harnesses.codex)."""
Split = Literal["train", "dev", "test"]
"""The task splits every environment publishes (the taskset option `split`)."""
HARNESSES: tuple[Harness, ...] = get_args(Harness)
SPLITS: tuple[Split, ...] = get_args(Split)
