"""One row per episode for the viewer's episode table: what a reader sorts and filters by (task,
reward, grade, stop, turns, budget, retries, errors, rewrites, time, tokens, cost), as plain JSON.

`score` is what the episode adds to its run's mean (`arena.traces.Episode.score`): null for an
infrastructure failure, which the mean leaves out and the run shows beside it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.traces import Episode
from arena.view.prices import Prices

__all__ = ["episode_row", "wall_seconds"]

ERROR_CHARS = 300
REASON_CHARS = 2000


def episode_row(index: int, e: Episode, prices: Prices | None) -> dict[str, Any]:
    grade = e.info.get("grade")
    grade = grade if isinstance(grade, dict) else {}
    parts = {str(k): v for k, v in grade.items() if k not in ("reason", "score") and _scalar(v)}
    used = {k: v for k, v in e.metrics.items() if k.endswith("_used") and isinstance(v, (int, float))}
    error = next((str(x.get("message") or x.get("type") or "") for x in reversed(e.errors)), "")
    start = e.timing.get("start")
    return {
        "i": index,
        "task": e.task,
        "reward": e.reward,
        "score": e.score,
        "failed": e.failed,
        "infra": e.infra_failed,
        "agent_fault": e.agent_fault or "",
        "reason": str(grade.get("reason") or "")[:REASON_CHARS],
        "parts": parts,
        "stop": e.stop_condition or "",
        "turns": e.turns,
        "used": next(iter(used.values()), None),
        "used_name": next(iter(used), ""),
        "retries": e.retries,
        "errors": len(e.errors),
        "error": error[:ERROR_CHARS],
        "rewrites": len(e.rewrites),
        "denials": sum(r.stage == "pre" for r in e.rewrites),
        "start": start if isinstance(start, (int, float)) else None,
        "wall": wall_seconds(e.timing),
        "tokens_in": e.usage.get("input"),
        "tokens_out": e.usage.get("output"),
        "cost": prices.cost(e.model, e.usage) if prices is not None else None,
        "image": e.image,
    }


def wall_seconds(timing: Mapping[str, Any]) -> float | None:
    """Seconds from the episode's start to the end of its last phase."""
    start = timing.get("start")
    if not isinstance(start, (int, float)):
        return None
    ends = [
        float(span["end"])
        for span in timing.values()
        if isinstance(span, dict) and isinstance(span.get("end"), (int, float))
    ]
    return round(max(ends, default=float(start)) - float(start), 2)


def _scalar(value: object) -> bool:
    return isinstance(value, (int, float, str, bool)) and not (isinstance(value, str) and len(value) > 200)
