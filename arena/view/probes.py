"""A probe directory's gate as the runs page shows it, read from its `probe.json` (tolerant: a
report being rewritten, or of another version, shows what it can and says what it could not)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from arena.traces import no_constant

__all__ = ["probe_gate"]

KEYS = ("env", "policy", "role", "episodes", "failed", "mean", "ci95", "min", "max", "turns", "budget_used", "rewrites", "retries")


def probe_gate(path: Path) -> dict[str, Any]:
    try:
        saved = json.loads((path / "probe.json").read_text(errors="replace"), parse_constant=no_constant)
    except (OSError, ValueError, RecursionError) as exc:
        return {"path": str(path), "name": path.name, "error": f"probe.json unreadable: {exc}", "scores": [], "failures": []}
    if not isinstance(saved, dict):
        return {"path": str(path), "name": path.name, "error": "probe.json holds no report object", "scores": [], "failures": []}
    scores = _list(saved.get("scores"))
    failures = _list(saved.get("failures"))
    return {
        "path": str(path), "name": path.name, "harness": str(saved.get("harness", "")), "split": str(saved.get("split", "")),
        "tasks": saved.get("tasks") if isinstance(saved.get("tasks"), int) else None, "complete": bool(saved.get("complete")),
        "passed": bool(saved.get("complete")) and not failures,
        "scores": [{k: _scalar(s.get(k)) for k in KEYS} for s in scores if isinstance(s, dict)],
        "failures": [{"env": str(f.get("env", "")), "rule": str(f.get("rule", "")), "detail": str(f.get("detail", ""))}
                     for f in failures if isinstance(f, dict)],
    }


def _scalar(value: object) -> object:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
