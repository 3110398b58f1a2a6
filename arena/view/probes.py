"""A probe directory's gate as the runs page shows it, read from its `probe.json` (tolerant: a
report being rewritten, or of another version, shows what it can and says what it could not)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.traces import no_constant

__all__ = ["probe_gate"]

KEYS = (
    "env",
    "policy",
    "role",
    "episodes",
    "failed",
    "tasks",
    "mean",
    "low",
    "high",
    "lower",
    "upper",
    "min",
    "max",
    "turns",
    "budget_used",
    "rewrites",
    "retries",
)
VERDICTS = ("passed", "failed", "undecided")


def probe_gate(path: Path) -> dict[str, Any]:
    try:
        saved = json.loads((path / "probe.json").read_text(errors="replace"), parse_constant=no_constant)
    except (OSError, ValueError, RecursionError) as exc:
        return {
            "path": str(path),
            "name": path.name,
            "error": f"probe.json unreadable: {exc}",
            "scores": [],
            "failures": [],
        }
    if not isinstance(saved, dict):
        return {
            "path": str(path),
            "name": path.name,
            "error": "probe.json holds no report object",
            "scores": [],
            "failures": [],
        }
    scores = _list(saved.get("scores"))
    failures = _list(saved.get("failures"))
    undecided = [r for r in _list(saved.get("rules")) if isinstance(r, dict) and r.get("status") == "undecided"]
    complete = bool(saved.get("complete"))
    gate = saved.get("gate")
    if gate not in VERDICTS:  # a report of an older version: only failures were recorded
        gate = ("failed" if failures else "passed") if complete else None
    return {
        "path": str(path),
        "name": path.name,
        "harness": str(saved.get("harness", "")),
        "split": str(saved.get("split", "")),
        "tasks": saved.get("tasks") if isinstance(saved.get("tasks"), int) else None,
        "complete": complete,
        "gate": gate if complete else None,
        "passed": complete and gate == "passed",
        "scores": [{k: _scalar(s.get(k)) for k in KEYS} for s in scores if isinstance(s, dict)],
        "failures": [_rule(f) for f in failures if isinstance(f, dict)],
        "undecided": [_rule(r) for r in undecided],
    }


def _rule(rule: dict[str, Any]) -> dict[str, str]:
    needed = rule.get("tasks_needed")
    more = f" (about {needed} tasks would decide it)" if isinstance(needed, int) else ""
    return {
        "env": str(rule.get("env", "")),
        "rule": str(rule.get("rule", "")),
        "detail": str(rule.get("detail", "")) + more,
    }


def _scalar(value: object) -> object:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
