"""Runs a migration, and every read of its result, in a confined child process (see `jail_child`).

Transaction semantics, shared with the sandbox's `execute`: the migration is split into statements
exactly as SQLite tokenizes them; BEGIN/COMMIT/END statements are ignored and the whole migration
runs inside one transaction the child opens; a bare ROLLBACK, ATTACH, DETACH or VACUUM is refused
before anything runs. Any error rolls the whole migration back, and the report says whether the
database file is byte-for-byte what it was before. Limits are CPU work (SQLite VM steps, CPU
seconds; see `budget`), not wall time; the wall-clock timeout is only a backstop for a hung child.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schema_migration.budget import Limits

from sqlite_sandbox.engine import IGNORED, classify, first_refused, split_statements

__all__ = ["CHILD", "JailReport", "Limits", "RowPlan", "crash_cause", "prepare", "run"]

CHILD = Path(__file__).with_name("jail_child.py")
STDERR_CHARS = 2000


@dataclass(frozen=True)
class RowPlan:
    """Where the reference rows are (a file in the child's scratch directory) and what to compare."""

    path: str
    alias: str
    objects: list[dict[str, Any]]
    """One per reference table or view: name, table, columns, key, real, rows."""


@dataclass(frozen=True)
class JailReport:
    """What the child did and read on one held-out database."""

    status: str
    """"ok", "error" (the migration raised; rolled back), "refused" (not run), "crashed",
    "integrity" (an integrity or foreign-key check could not run) or "unreadable"."""
    name: str = ""
    error: str = ""
    statement: int = 0
    """1-based index of the failing statement, among the statements that ran."""
    unchanged: bool | None = None
    """After an error: whether the database file is exactly as before."""
    steps: int = 0
    """SQLite VM steps the migration took (to the progress handler's resolution)."""
    cpu_s: float = 0.0
    file_bytes: int = 0
    read_steps: int = 0
    """SQLite VM steps reading the result took (facts, battery, rows)."""
    read_cpu_s: float = 0.0
    limits: dict[str, int] = field(default_factory=dict)
    """The limits the child reported in force (CPU seconds, address space, file size)."""
    integrity: list[str] = field(default_factory=list)
    fk_violations: int = 0
    fk_tables: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    """The delivered schema as the child read it from sqlite_master and PRAGMAs: the named tables
    and views, counts and names of all tables and triggers, untouched objects' "unchanged" flags."""
    battery: list[list[Any]] = field(default_factory=list)
    """Per battery scenario, per step: [accepted, rows it returned, per object (count change, rows at the keys) or "error"]."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Per reference object: expected, matched, wrong, lost, extra, columns (name -> wrong count), bad_keys, error."""


def prepare(sql: str) -> tuple[list[str], str]:
    """(statements to run, refusal reason or ""); BEGIN/COMMIT/END are dropped."""
    statements = split_statements(sql)
    if refused := first_refused(statements):
        return [], "statement {} refused: {}".format(*refused)
    kept = [st for st in statements if classify(st) != IGNORED]
    return kept, "" if kept else "the migration holds no statement to run"


def crash_cause(code: int, stderr: str, request: dict[str, Any]) -> str:
    """Why the child died, from its exit status and the last line of its stderr, naming the limit."""
    if code < 0:
        sig = -code
        known: dict[int, str] = {
            signal.SIGXCPU: f"it hit the hard CPU-time limit ({request['cpu_s']} CPU-s for all of grading)",
            signal.SIGKILL: "it was killed (SIGKILL: the hard CPU-time limit, or the kernel's out-of-memory killer)",
            signal.SIGXFSZ: f"it hit the file-size limit ({request['file_mb']} MiB)",
            signal.SIGSEGV: "it crashed (SIGSEGV)",
        }
        return known.get(sig, f"it was killed by signal {sig}")
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    if "MemoryError" in last:
        return f"it ran out of memory (the address-space limit is {request['memory_mb']} MiB)"
    return f"it exited with status {code}" + (f": {last.strip()[:300]}" if last else "")


def run(
    scratch: Path, statements: list[str], worlds: list[dict[str, Any]], limits: Limits, file_mb: int
) -> list[JailReport]:
    """Run `statements` on each world's database (files in `scratch`) in the confined child; one
    report per world it got to (a crash: one report for all)."""
    request = {
        "statements": statements,
        "worlds": worlds,
        "cpu_s": limits.cpu_s,
        "cap_s": float(limits.cpu_s),
        "memory_mb": limits.memory_mb,
        "file_mb": file_mb,
        "length_mb": limits.length_mb,
    }
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", str(CHILD)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=scratch,
        env={"SQLITE_TMPDIR": str(scratch), "PATH": "/usr/bin:/bin"},
    )
    try:
        out, err = process.communicate(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL), timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return [
            JailReport(
                "crashed",
                error=f"the migration process hung past the {limits.wall_s:g} s wall-clock backstop and was killed",
            )
        ]
    except BaseException:
        process.kill()
        process.communicate()
        raise
    try:
        report = json.loads(out)
    except (json.JSONDecodeError, UnicodeDecodeError):
        stderr = err[-STDERR_CHARS:].decode("utf-8", "replace")
        return [
            JailReport(
                "crashed", error=f"the migration process died: {crash_cause(process.returncode, stderr, request)}"
            )
        ]
    return [JailReport(**world, limits=report["limits"]) for world in report["worlds"]]
