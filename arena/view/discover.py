"""Where the runs are: each path given to `arena view` is a run directory (it holds `traces.jsonl`),
or a directory whose children or grandchildren are (a demo's outputs, a probe). Probe directories
(holding `probe.json`) are found the same way. Looked up again as the viewer runs, so a run that
starts later appears."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from arena.errors import PrerequisiteError
from arena.traces import TRACES_FILE

__all__ = ["check_paths", "find_probes", "find_runs", "run_id"]


def check_paths(paths: Sequence[Path]) -> None:
    """Raises:
    PrerequisiteError: a path is missing or not a directory.
    """
    for path in paths:
        if not path.exists():
            raise PrerequisiteError(f"{path} does not exist: give vf-eval run directories or a directory holding them")
        if not path.is_dir():
            hint = " (that is a run's traces file: give its directory)" if path.name == TRACES_FILE else ""
            raise PrerequisiteError(
                f"{path} is not a directory{hint}: give vf-eval run directories or a directory holding them"
            )


def find_runs(paths: Iterable[Path]) -> list[Path]:
    """Every run directory under `paths`, in order, each once. A `traces.jsonl` that is not a
    regular file still marks its directory as a run (whose reader then says what is wrong)."""
    found: list[Path] = []
    for path in paths:
        for candidates in (
            [path] if (path / TRACES_FILE).exists() else [],
            path.glob(f"*/{TRACES_FILE}"),
            path.glob(f"*/*/{TRACES_FILE}"),
        ):
            runs = sorted(p if p == path else p.parent for p in candidates)
            if runs:
                found += [run for run in runs if run not in found]
                break
    return found


def find_probes(paths: Iterable[Path]) -> list[Path]:
    probes: set[Path] = set()
    for path in paths:
        probes |= {p.parent for p in path.glob("probe.json")} | {p.parent for p in path.glob("*/probe.json")}
    return sorted(probes)


def run_id(path: Path, taken: Iterable[str]) -> str:
    """A run's id in URLs: its directory name, stable across restarts; a second run of the same
    name (under another folder) adds a digest of its absolute path."""
    name = path.name or "run"
    if name not in set(taken):
        return name
    return f"{name}~{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"
