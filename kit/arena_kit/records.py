"""The record a rewrite rule leaves, and where live records go: light (no verifiers), so the host
side reads what the rollout side writes without importing the rollout machinery."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["CONCURRENCY_ENV", "POOL_INFO", "REWRITES_FILE", "RUN_DIR_ENV", "AuditRecord"]

CONCURRENCY_ENV = "ARENA_EVAL_CONCURRENCY"
"""Set by Arena's eval launcher (`arena.evalrun`) to the eval's `max_concurrent`: what `[env] pool = "auto"` sizes by."""
POOL_INFO = "arena_box"
"""`trace.info` key of a rollout whose eval ran with the warm pool (`arena_kit.envs.lean`): `pooled` (the box
was booted ahead), `claim_start` (epoch s the rollout began waiting for its box), `claim_s`, `discarded`."""
RUN_DIR_ENV = "ARENA_RUN_DIR"
"""Set by Arena when it launches vf-eval: the run dir where `rewrites.jsonl` grows as rules fire."""
REWRITES_FILE = "rewrites.jsonl"


class AuditRecord(BaseModel):
    """One denial or rewrite: which rule, on what call, and a masked excerpt of the original."""

    id: str
    run: str
    rollout: str
    harness: str
    environment: str
    task: str
    rule: str
    stage: str
    tool: str
    arguments: dict[str, Any]
    original_sha256: str
    original_excerpt: str
    replacement: str
    time: float
