"""Runs a migration on a scratch database in a confined child process (see `jail_child`) and reads its report.

Transaction semantics, shared with the sandbox's `execute`: the migration is split into statements
exactly as SQLite tokenizes them; BEGIN/COMMIT/END statements are ignored and the whole migration
runs inside one transaction the grader opens; a bare ROLLBACK, ATTACH, DETACH or VACUUM is refused
before anything runs. Any error rolls the whole migration back, and the report says whether the
database file is byte-for-byte what it was before.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from schema_migration.dbfile import BuildPlan

from sqlite_sandbox.engine import IGNORED, classify, first_refused, split_statements

CHILD = Path(__file__).with_name("jail_child.py")


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    """Wall-clock seconds the migration may run (checked by SQLite's progress handler)."""
    cpu_s: int = 30
    """CPU seconds for the whole child (RLIMIT_CPU)."""
    memory_mb: int = 1536
    """Address space of the child (RLIMIT_AS), in MiB."""
    file_mb: int = 512
    """Largest file the child may write (RLIMIT_FSIZE), in MiB: bounds the database's growth."""


@dataclass(frozen=True)
class JailReport:
    status: str
    """"ok", "error" (the migration raised; rolled back), "refused" (not run) or "crashed"."""
    error: str = ""
    statement: int = 0
    """1-based index of the failing statement, among the statements that ran."""
    unchanged: bool | None = None
    """After an error: whether the database file is exactly as before."""
    integrity: list[str] = field(default_factory=list)
    fk_violations: int = 0
    fk_sample: list[list[str]] = field(default_factory=list)
    probes: list[dict] = field(default_factory=list)


def prepare(sql: str) -> tuple[list[str], str]:
    """(statements to run, refusal reason or ""); BEGIN/COMMIT/END are dropped."""
    statements = split_statements(sql)
    if refused := first_refused(statements):
        return [], "statement {} refused: {}".format(*refused)
    return [st for st in statements if classify(st) != IGNORED], ""


class Running:
    """A migration running in the child; `result()` waits for its report."""

    def __init__(self, process: subprocess.Popen[bytes] | None, limits: Limits, early: JailReport | None = None) -> None:
        self._process = process
        self._limits = limits
        self._early = early

    @property
    def refused(self) -> bool:
        """Whether the migration was refused before any process started."""
        return self._early is not None

    def kill(self) -> None:
        """Stop the child (if any) and reap it; for callers abandoning the run."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.communicate()

    def result(self) -> JailReport:
        if self._early is not None:
            return self._early
        assert self._process is not None
        try:
            out, _ = self._process.communicate(timeout=self._limits.wall_s + 30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return JailReport("crashed", error="the migration exceeded the wall-clock limit and was killed")
        try:
            report = json.loads(out)
        except (json.JSONDecodeError, UnicodeDecodeError):
            code = self._process.returncode
            signal = -code if code < 0 else 0
            why = {9: "the CPU-time limit", 24: "the CPU-time limit", 25: "the file-size limit"}.get(signal, "a resource limit")
            return JailReport("crashed", error=f"the migration process died (exit {code}, likely {why})")
        return JailReport(**report)


def start(db: Path, sql: str, probes: list[str], limits: Limits = Limits(), build: BuildPlan | None = None) -> Running:
    """Start running `sql` on the database file `db` (alone in its scratch directory); with `build`,
    the child first creates `db` from that plan, in parallel with whatever the caller does next."""
    statements, refused = prepare(sql)
    if refused:
        return Running(None, limits, JailReport("refused", error=refused))
    if not statements:
        return Running(None, limits, JailReport("refused", error="the migration holds no statement to run"))
    request = {
        "db": db.name,
        "build": None if build is None else {"create": build.create, "inserts": build.inserts, "post": build.post},
        "statements": statements,
        "probes": probes,
        "wall_s": limits.wall_s,
        "cpu_s": limits.cpu_s,
        "memory_mb": limits.memory_mb,
        "file_mb": limits.file_mb,
    }
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", str(CHILD)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=db.parent,
        env={"SQLITE_TMPDIR": str(db.parent), "PATH": "/usr/bin:/bin"},
    )
    assert process.stdin is not None
    try:
        # The child reads its whole request at once, then works while the caller goes on.
        process.stdin.write(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
    except BrokenPipeError:
        pass  # it died at start; result() reports it
    finally:
        process.stdin.close()
        process.stdin = None  # so communicate() only reads
    return Running(process, limits)


def run(db: Path, sql: str, probes: list[str], limits: Limits = Limits(), build: BuildPlan | None = None) -> JailReport:
    """Run `sql` on `db` and wait for the report."""
    return start(db, sql, probes, limits, build).result()
