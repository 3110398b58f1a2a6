"""One run as the viewer follows it: its episode rows (appended as vf-eval appends lines), where
each line is in `traces.jsonl` (a transcript is one seek and one parse when it is opened), its
numbers, config, versions, logs and whether it is still running.

A run that cannot be read is kept with its problem (the page names it) and what was read before
it; it never stops the other runs from opening."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.errors import TraceError, UsageError
from arena.evalrun import VERSIONS_FILE, saved_config
from arena.traces import TRACES_FILE, TraceFollower, no_constant
from arena.view.prices import find_prices
from arena.view.rows import episode_row
from arena.view.summary import run_numbers

__all__ = ["ACTIVE_S", "RunView"]

ACTIVE_S = 90.0
"""A run whose traces or log changed this recently, and that has not ended, is shown as running."""


class RunView:
    def __init__(self, path: Path, rid: str) -> None:
        self.path = path
        self.id = rid
        self.follower = TraceFollower(path / TRACES_FILE)
        self.rows: list[dict[str, Any]] = []
        self.spans: list[tuple[int, int]] = []
        self.trace_ids: list[str] = []
        self.problem = ""
        self.config: dict[str, Any] = {}
        self.prices, self.prices_warning = find_prices(path)
        self.numbers = run_numbers([])
        self.versions: dict[str, str] = {}
        self.budget: float | None = None
        self._size = -1
        self.refresh()

    def refresh(self) -> bool:
        """Read what was appended since the last refresh; whether anything changed."""
        size = _size(self.follower.path)
        if size == self._size:
            return False
        if size < self.follower.offset or self.problem:
            self._restart()  # the file was started again (vf-eval --clean) or rewritten: read it anew
        self._size = size
        if not self.config:
            self.config = _config(self.path)
            self.versions = _versions(self.path)
        try:
            lines = self.follower.read()
        except TraceError as exc:
            self.problem = str(exc)
            return True
        for line in lines:
            self.rows.append(episode_row(len(self.rows), line.episode, self.prices))
            self.spans.append((line.offset, line.length))
            self.trace_ids.append(line.episode.id)
        if lines:
            self.numbers = run_numbers(self.rows)
            if self.budget is None:
                self.budget, verifiers = _first_line_facts(self.follower.path)
                if verifiers:
                    self.versions.setdefault("verifiers", verifiers)
        return True

    def _restart(self) -> None:
        self.follower = TraceFollower(self.follower.path)
        self.rows, self.spans, self.trace_ids, self.problem = [], [], [], ""
        self.numbers = run_numbers([])

    def summary(self, now: float | None = None) -> dict[str, Any]:
        """The runs page's row for this run (no episode rows)."""
        config = self.config
        model = str(config.get("model") or "")
        starts = [r["start"] for r in self.rows if r["start"] is not None]
        ends = [r["start"] + r["wall"] for r in self.rows if r["start"] is not None and r["wall"] is not None]
        warnings = [w for w in (self.follower.skipped, self._tail_warning(now), self.prices_warning) if w]
        return {
            "id": self.id,
            "name": self.path.name,
            "path": str(self.path),
            "env": _dig(config, "env", "taskset", "id"),
            "harness": _dig(config, "env", "agent", "harness", "id"),
            "model": model,
            "policy": model.rsplit("/", 1)[-1] if model.startswith("arena/") else "",
            "split": _dig(config, "env", "taskset", "split"),
            **self.numbers,
            "count": len(self.rows),
            "started": min(starts, default=None),
            "ended": max(ends, default=None),
            "wall": round(max(ends) - min(starts), 1) if starts and ends else None,
            "budget": self.budget,
            "status": self.status(now),
            "expected": self.expected,
            "problem": self.problem,
            "warning": "; ".join(warnings),
            "priced": self.prices is not None,
        }

    def details(self) -> dict[str, Any]:
        """What the run page shows besides its rows: the config, the images its boxes ran (each task's own, not
        the runtime config's default), versions and logs."""
        return {
            "config": self.config,
            "images": sorted({row["image"] for row in self.rows if row["image"]}),
            "versions": self.versions,
            "logs": self.logs(),
            "prices": str(self.prices.path) if self.prices else "",
        }

    @property
    def expected(self) -> int | None:
        """Episodes the run will have when it ends (tasks × rollouts), if its config says."""
        limit = _obj(self.config.get("select")).get("limit")
        rollouts = self.config.get("num_rollouts", 1)
        return limit * rollouts if isinstance(limit, int) and isinstance(rollouts, int) else None

    def status(self, now: float | None = None) -> str:
        """`broken` (unreadable), `running`, `complete`, `incomplete` (stopped short of its
        tasks), or '' (not known)."""
        if self.problem:
            return "broken"
        if (self.path / "vf-eval.log").is_file() or (self.expected is not None and len(self.rows) >= self.expected):
            return "complete"
        if (now or time.time()) - self._last_write() < ACTIVE_S:
            return "running"
        return "incomplete" if self.expected is not None else ""

    def logs(self) -> list[dict[str, Any]]:
        """The run's logs: Arena's copy of vf-eval's output, the live one beside the run, and
        verifiers' log of each launch attempt."""
        candidates = [self.path / "vf-eval.log", self.path.parent / f"{self.path.name}.vf-eval.log"]
        candidates += sorted((self.path / "logs").glob("attempt_*/eval.log"), key=lambda p: _attempt(p.parent.name))
        # Only regular files that are where a log belongs (a symlink out of the run's folder is not served).
        home = self.path.parent.resolve()
        return [
            {
                "name": str(p.relative_to(self.path)) if p.is_relative_to(self.path) else p.name,
                "path": str(p),
                "bytes": p.stat().st_size,
            }
            for p in candidates
            if p.is_file() and p.resolve().is_relative_to(home)
        ]

    def line(self, index: int) -> bytes:
        """The raw `traces.jsonl` line of episode `index`.

        Raises:
            UsageError: no such episode, or the file no longer holds it where it was.
        """
        if not 0 <= index < len(self.spans):
            raise UsageError(f"no episode {index} in run {self.id}")
        offset, length = self.spans[index]
        with self.follower.path.open("rb") as f:
            f.seek(offset)
            raw = f.read(length)
        if _trace_id(raw) != self.trace_ids[index]:
            raise UsageError(
                f"episode {index} of {self.path} is no longer where it was in its {TRACES_FILE} (rewritten?): reload"
            )
        return raw

    def _last_write(self) -> float:
        paths = [
            self.follower.path,
            self.path.parent / f"{self.path.name}.vf-eval.log",
            self.path / "logs" / "latest" / "eval.log",
        ]
        return max((p.stat().st_mtime for p in paths if p.is_file()), default=0.0)

    def _tail_warning(self, now: float | None) -> str:
        tail = self._size - self.follower.offset
        if tail > 0 and self.status(now) != "running":
            return (
                f"the last line of {TRACES_FILE} is incomplete ({tail} bytes, no newline): skipped as a write cut short"
            )
        return ""


def _trace_id(raw: bytes) -> str:
    try:
        row = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=no_constant)
    except (ValueError, RecursionError):
        return ""
    traces = _obj(row).get("traces")
    return str(_obj(traces[0] if isinstance(traces, list) and traces else None).get("id") or "")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _attempt(name: str) -> int:
    suffix = name.removeprefix("attempt_")
    return int(suffix) if suffix.isdigit() else 0


def _config(path: Path) -> dict[str, Any]:
    try:
        return saved_config(path) or {}
    except UsageError:
        return {}


def _versions(path: Path) -> dict[str, str]:
    """What Arena recorded when it launched the run (`arena.evalrun.VERSIONS_FILE`)."""
    for candidate in (path / VERSIONS_FILE, path.parent / f"{path.name}.{VERSIONS_FILE}"):
        try:
            data = json.loads(candidate.read_text())
        except (OSError, ValueError):
            continue
        return {str(k): str(v) for k, v in _obj(data).items()}
    return {}


def _first_line_facts(path: Path) -> tuple[float | None, str]:
    """The run's budget of queries or statements (a `*budget` number in its first task's data: the
    environments set it per taskset, so one task speaks for the run; None if there is none) and
    the verifiers version its first trace records ('' if none)."""
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 24)
        row = _obj(json.loads(first, parse_constant=no_constant)) if first.strip() else {}
    except (OSError, ValueError, RecursionError):
        return None, ""
    data = _obj(_obj(row.get("task")).get("data"))
    budget = next(
        (float(v) for k, v in data.items() if str(k).endswith("budget") and isinstance(v, (int, float))), None
    )
    traces = row.get("traces")
    trace = _obj(traces[0] if isinstance(traces, list) and traces else None)
    return budget, str(_obj(trace.get("verifiers")).get("version") or "")


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dig(data: Mapping[str, Any], *keys: str) -> str:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return "" if value is None or isinstance(value, (dict, list)) else str(value)
