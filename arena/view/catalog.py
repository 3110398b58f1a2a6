"""What `arena view` shows, read from run directories and kept current: the runs (each followed as
its `traces.jsonl` grows, new run directories picked up as they appear), probe gates, and on demand
one episode's transcript or raw line, a search over a run's transcripts, the paired tests of runs.

Everything here is data (JSON-ready dicts); nothing is markup. A run that cannot be read is listed
with its problem and never keeps the others from opening. One lock guards the runs: the server
refreshes them in a worker thread while requests read them in others."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import PrerequisiteError, UsageError
from arena.traces import TRACES_FILE, no_constant
from arena.view.discover import check_paths, find_probes, find_runs, run_id
from arena.view.probes import probe_gate
from arena.view.run import RunView
from arena.view.search import SearchIndex, search_text
from arena.view.summary import pair
from arena.view.transcript import transcript

__all__ = ["MAX_PAIRS", "Catalog", "load_catalog"]

MAX_PAIRS = 2000
"""Paired tests an export precomputes at most (runs sharing tasks); past that, compare on the command line."""


@dataclass
class Catalog:
    roots: list[Path]
    runs: dict[str, RunView] = field(default_factory=dict)
    probes: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0
    """Bumped whenever a run or the list of runs changes (what a live page polls)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    _searches: dict[str, SearchIndex] = field(default_factory=dict)

    def refresh(self) -> bool:
        """Follow every run's growth and pick up new run directories; whether anything changed."""
        found = find_runs(self.roots)
        with self.lock:
            known = {run.path for run in self.runs.values()}
            changed = False
            for path in found:
                if path not in known:
                    rid = run_id(path, self.runs)
                    self.runs[rid] = RunView(path, rid)
                    changed = True
            for run in list(self.runs.values()):
                changed |= run.refresh()
            self.probes = [probe_gate(p) for p in find_probes(self.roots)]
            if changed:
                self.generation += 1
            return changed

    def index(self) -> dict[str, Any]:
        """The runs page: every run's summary (no episode rows), the probes, the generation."""
        now = time.time()
        with self.lock:
            return {
                "runs": [run.summary(now) for run in self.runs.values()],
                "probes": self.probes,
                "generation": self.generation,
            }

    def run(self, rid: str) -> RunView:
        """Raises:
        UsageError: no run of that id.
        """
        with self.lock:
            if rid not in self.runs:
                raise UsageError(f"no run {rid!r}")
            return self.runs[rid]

    def rows(self, rid: str, start: int = 0) -> dict[str, Any]:
        """A run's summary, details and its episode rows from `start` (a live page asks for the new ones)."""
        run = self.run(rid)
        with self.lock:
            return {
                "summary": run.summary(),
                **run.details(),
                "start": start,
                "count": len(run.rows),
                "rows": run.rows[start:],
                "generation": self.generation,
            }

    def episode(self, rid: str, index: int) -> dict[str, Any]:
        """One episode's page: its row and its transcript.

        Raises:
            UsageError: no such run or episode, or its line moved.
        """
        run = self.run(rid)
        page = transcript(_parse(run.line(index)))
        with self.lock:
            return {"run": rid, "i": index, "row": run.rows[index], "run_name": run.path.name, **page}

    def raw(self, rid: str, index: int) -> bytes:
        return self.run(rid).line(index)

    def search(self, rid: str, query: str) -> list[dict[str, int]]:
        """Episodes of run `rid` whose transcript holds `query` (case-insensitive)."""
        run = self.run(rid)
        with self.lock:
            index = self._searches.get(rid)
            if index is None or index.rows is not run.rows:  # a run read anew gets a new index
                index = self._searches[rid] = SearchIndex(rows=run.rows)
            count = len(run.rows)

        def text_of(i: int) -> str:
            try:
                return search_text(run.rows[i]["task"], transcript(_parse(run.line(i))))
            except UsageError:
                return ""

        return index.search(query, count, text_of)

    def pairs(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The paired test of every two of these runs that share a task (B − A, in the order given)."""
        runs = [self.run(rid) for rid in ids]
        out: list[dict[str, Any]] = []
        with self.lock:
            for x, a in enumerate(runs):
                for b in runs[x + 1 :]:
                    if len(out) >= MAX_PAIRS:
                        return out
                    result = pair(a.rows, b.rows)
                    if result is not None:
                        out.append({"a": a.id, "b": b.id, **result})
        return out


def load_catalog(paths: Sequence[Path]) -> Catalog:
    """Read every run under `paths`.

    Raises:
        PrerequisiteError: a path is missing or not a directory, or no path holds a run.
    """
    check_paths(paths)
    catalog = Catalog(roots=list(paths))
    catalog.refresh()
    if not catalog.runs:
        raise PrerequisiteError(
            f"{', '.join(map(str, paths))}: no {TRACES_FILE} here nor in the subdirectories: "
            "give a vf-eval run directory, a probe directory or a demo's outputs directory"
        )
    return catalog


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        row = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=no_constant)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"the episode's line no longer parses ({exc})") from None
    return row if isinstance(row, dict) else {}
