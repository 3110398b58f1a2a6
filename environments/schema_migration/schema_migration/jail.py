"""Runs a migration, and every read of its result, in a confined child process (see `jail_child`).

Transaction semantics, shared with the sandbox's `execute`: the migration is split into statements
exactly as SQLite tokenizes them; BEGIN/COMMIT/END statements are ignored and the whole migration
runs inside one transaction the child opens; a bare ROLLBACK, ATTACH, DETACH or VACUUM is refused
before anything runs. Any error rolls the whole migration back, and the report says whether the
database file is byte-for-byte what it was before. Limits are CPU work (SQLite VM steps, CPU
seconds), not wall time; the wall-clock timeout is only a backstop for a hung child.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schema_migration.dbfile import BuildPlan

from sqlite_sandbox.engine import IGNORED, classify, first_refused, split_statements

__all__ = ["CHILD", "JailReport", "Limits", "RowPlan", "Running", "Wanted", "crash_cause", "prepare", "run", "start"]

CHILD = Path(__file__).with_name("jail_child.py")
STDERR_CHARS = 2000


@dataclass(frozen=True)
class Limits:
    steps: int | None = None
    """SQLite VM steps the migration may take (the same count on any machine, under any load);
    None: `steps_per_row` per held-out row, at least `min_steps` (see `for_rows`)."""
    read_steps: int | None = None
    """SQLite VM steps for reading the result (integrity, schema, probes, rows), agent views
    included; None: scaled like `steps`."""
    steps_per_row: int = 40_000
    """The reference migrations take 25-85 steps per row (0.06-0.18 M steps at 2,000 rows), and
    reading them back a few times that: ~500x headroom, while a hostile spin stops after ~3 s of
    CPU per phase at the default 2,000 rows (SQLite runs ~5e7 steps/s)."""
    min_steps: int = 20_000_000
    cpu_s: int = 60
    """CPU seconds for the whole child (RLIMIT_CPU)."""
    memory_mb: int = 1024
    """Address space of the child (RLIMIT_AS), in MiB; temp tables and sorts live in it too."""
    file_mb: int = 512
    """Largest file the child may write (RLIMIT_FSIZE), in MiB: bounds the database's growth."""
    length_mb: int = 32
    """Largest string or blob SQLite may build (SQLITE_LIMIT_LENGTH), in MiB."""
    wall_s: float = 300.0
    """Backstop only: wall-clock seconds before the child is presumed hung and killed."""

    def for_rows(self, rows: int) -> Limits:
        """These limits with unset step limits scaled to a database of `rows` rows."""
        scaled = max(self.min_steps, self.steps_per_row * rows)
        return replace(self, steps=scaled if self.steps is None else self.steps, read_steps=scaled if self.read_steps is None else self.read_steps)


@dataclass(frozen=True)
class RowPlan:
    """Where the reference rows are (a file in the child's scratch directory) and what to compare."""

    path: str
    alias: str
    objects: list[dict[str, Any]]
    """One per reference table or view: name, table, columns, key, real, rows."""


@dataclass(frozen=True)
class JailReport:
    status: str
    """"ok", "error" (the migration raised; rolled back), "refused" (not run), "crashed",
    "integrity" (an integrity or foreign-key check could not run) or "unreadable"."""
    error: str = ""
    statement: int = 0
    """1-based index of the failing statement, among the statements that ran."""
    unchanged: bool | None = None
    """After an error: whether the database file is exactly as before."""
    steps: int = 0
    """SQLite VM steps the migration took (to the progress handler's resolution)."""
    read_steps: int = 0
    """SQLite VM steps reading the result took (probes, untouched views, rows)."""
    limits: dict[str, int] = field(default_factory=dict)
    """The limits the child reported in force (CPU seconds, address space, file size)."""
    integrity: list[str] = field(default_factory=list)
    fk_violations: int = 0
    fk_tables: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    """The delivered schema as the child read it from sqlite_master and PRAGMAs: the named tables
    and views, counts and names of all tables and triggers, untouched objects' "unchanged" flags."""
    probes: list[bool] = field(default_factory=list)
    """For each probe: whether it failed."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Per reference object: expected, matched, wrong, lost, extra, columns (name -> wrong count), error."""


def prepare(sql: str) -> tuple[list[str], str]:
    """(statements to run, refusal reason or ""); BEGIN/COMMIT/END are dropped."""
    statements = split_statements(sql)
    if refused := first_refused(statements):
        return [], "statement {} refused: {}".format(*refused)
    return [st for st in statements if classify(st) != IGNORED], ""


def crash_cause(code: int, stderr: str, limits: Limits) -> str:
    """Why the child died, from its exit status and the last line of its stderr."""
    if code < 0:
        sig = -code
        known: dict[int, str] = {
            signal.SIGXCPU: f"it hit the CPU-time limit ({limits.cpu_s} s)",
            signal.SIGXFSZ: f"it hit the file-size limit ({limits.file_mb} MiB)",
            signal.SIGKILL: "it was killed (SIGKILL, e.g. the kernel's out-of-memory killer)",
            signal.SIGSEGV: "it crashed (SIGSEGV)",
        }
        return known.get(sig, f"it was killed by signal {sig}")
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    if "MemoryError" in last:
        return f"it ran out of memory (address-space limit {limits.memory_mb} MiB)"
    return f"it exited with status {code}" + (f": {last.strip()[:300]}" if last else "")


class Running:
    """A migration running in the child; `compare()` hands it the reference rows, `result()` waits."""

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

    def compare(self, plan: RowPlan | None) -> None:
        """Send the reference rows' location (None: no row comparison); the child may have ended."""
        if self._process is None or self._process.stdin is None:
            return
        try:
            self._process.stdin.write(pickle.dumps(None if plan is None else plan.__dict__))
        except BrokenPipeError:
            pass  # it finished early (an error) or died; result() says which
        finally:
            try:
                self._process.stdin.close()
            except BrokenPipeError:
                pass
            self._process.stdin = None  # so communicate() only reads

    def result(self) -> JailReport:
        if self._early is not None:
            return self._early
        assert self._process is not None
        self.compare(None)
        try:
            out, err = self._process.communicate(timeout=self._limits.wall_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return JailReport("crashed", error=f"the migration process hung past the {self._limits.wall_s:g} s wall-clock backstop and was killed")
        try:
            report = json.loads(out)
        except (json.JSONDecodeError, UnicodeDecodeError):
            stderr = err[-STDERR_CHARS:].decode("utf-8", "replace")
            return JailReport("crashed", error=f"the migration process died: {crash_cause(self._process.returncode, stderr, self._limits)}")
        return JailReport(**report)


@dataclass(frozen=True)
class Wanted:
    """Names the child reads facts for: target tables and views, and untouched objects (whose
    stored SQL, and rows for views, must be as the build left them)."""

    tables: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    untouched: tuple[str, ...] = ()


def start(
    db: Path,
    sql: str,
    probes: list[str],
    limits: Limits = Limits(),
    build: BuildPlan | None = None,
    wanted: Wanted = Wanted(),
) -> Running:
    """Start running `sql` on the database file `db` (alone in its scratch directory); with `build`,
    the child first creates `db` from that plan, in parallel with whatever the caller does next.
    Unset step limits are scaled to the build's rows."""
    limits = limits.for_rows(0 if build is None else sum(len(rows) for _, rows in build.inserts))
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
        "tables": list(wanted.tables),
        "views": list(wanted.views),
        "untouched": list(wanted.untouched),
        "steps": limits.steps,
        "read_steps": limits.read_steps,
        "cpu_s": limits.cpu_s,
        "memory_mb": limits.memory_mb,
        "file_mb": limits.file_mb,
        "length_mb": limits.length_mb,
    }
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", str(CHILD)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=db.parent,
        env={"SQLITE_TMPDIR": str(db.parent), "PATH": "/usr/bin:/bin"},
    )
    assert process.stdin is not None
    try:
        # The child reads the request at once, then works while the caller goes on; stdin stays
        # open for the reference rows (`compare`).
        process.stdin.write(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
        process.stdin.flush()
    except BrokenPipeError:
        process.stdin = None  # it died at start; result() reports it
    return Running(process, limits)


def run(
    db: Path,
    sql: str,
    probes: list[str],
    limits: Limits = Limits(),
    build: BuildPlan | None = None,
    plan: RowPlan | None = None,
    wanted: Wanted = Wanted(),
) -> JailReport:
    """Run `sql` on `db`, compare rows with `plan` if given, and wait for the report."""
    running = start(db, sql, probes, limits, build, wanted)
    running.compare(plan)
    return running.result()
