"""Child process that runs one migration on each held-out database and reads every result back, confined; standard library only.

Started as `python -I -S jail_child.py` in a scratch directory holding the held-out databases and the
reference rows, it reads one pickled request (trusted, from the grader) on stdin: the statements, and
per world (the main held-out database and the family's extra ones) its file, the names to read
facts for, the battery, the reference rows and the budget. For each world it runs the migration on
its own connection and closes it (no TEMP object survives), then reads the delivered FILE through
fresh connections: integrity, schema facts (PRAGMAs and the planner only, no parsing of agent SQL),
the later-write battery, rows. It prints one JSON report.

Confinement: per phase, SQLite VM steps and CPU seconds counted by the progress handler against the
budget the grader derived from the reference's own cost (the same count on any machine for steps);
for the whole process RLIMIT_CPU (the hard cap), RLIMIT_AS, SQLITE_LIMIT_LENGTH, the file-size limit
as SQLite's own max_page_count (RLIMIT_FSIZE behind it); temp storage in memory; an authorizer
refusing ATTACH/DETACH, all but a few PRAGMAs and dangerous functions; no attachable database while
agent SQL runs. The grader also imports this module to run
the reference migration in process (`run_world`), without the process limits.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import resource
import sqlite3
import sys
import time
from typing import TYPE_CHECKING, Any

if __name__ == "__main__" and not TYPE_CHECKING:  # the confined process: no site-packages, the sibling module by path
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jail_reads as reads
else:
    from schema_migration import jail_reads as reads

__all__ = ["Budget", "main", "run_world"]

ALLOWED_PRAGMAS = frozenset(
    {
        "foreign_keys", "defer_foreign_keys", "legacy_alter_table", "recursive_triggers",
        "foreign_key_check", "foreign_key_list", "table_info", "table_xinfo", "index_list",
        "index_info", "index_xinfo", "integrity_check", "quick_check", "user_version",
        "case_sensitive_like", "automatic_index",
    }
)  # fmt: skip
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "fts3_tokenizer", "edit"})
TICK = 1000
"""VM steps between progress-handler calls."""
RESERVE_S = 0.5
"""CPU seconds kept back under the hard cap for writing the report."""
ERROR_CHARS = 300
UNLIMITED = 10**15


def authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class Budget:
    """Interrupts a connection's statements once `steps` SQLite VM steps or `cpu_s` CPU seconds are
    spent (steps: the same point whatever the machine's load; CPU: work a step can hide, such as one
    printf() building megabytes), and never past the process's hard cap `cap_s`."""

    def __init__(self, conn: sqlite3.Connection, steps: int, cpu_s: float, cap_s: float | None = None) -> None:
        self.ticks = 0
        self.limit = max(1, steps // TICK)
        self.cpu_s = cpu_s
        self.start = time.process_time()
        self.deadline = self.start + cpu_s if cap_s is None else min(self.start + cpu_s, cap_s - RESERVE_S)
        self.over = ""
        conn.set_progress_handler(self._tick, TICK)

    def _tick(self) -> int:
        self.ticks += 1
        if self.ticks > self.limit:
            self.over = f"step limit reached ({self.limit * TICK:,} SQLite VM steps, the budget set from the reference's own cost)"
        elif time.process_time() > self.deadline:
            self.over = f"CPU limit reached ({self.deadline - self.start:.1f} CPU-s, the budget set from the reference's own cost and the hard cap)"
        return int(bool(self.over))

    @property
    def steps(self) -> int:
        return self.ticks * TICK

    def cpu(self) -> float:
        return time.process_time() - self.start


def limit(req: dict[str, Any]) -> None:
    cpu = int(req["cpu_s"])
    memory = int(req["memory_mb"]) * 1024 * 1024
    fsize = int(req["file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def in_force() -> dict[str, Any]:
    """The limits this process actually runs under (for the report, so tests can assert them)."""
    return {
        "cpu_s": resource.getrlimit(resource.RLIMIT_CPU)[0],
        "memory_bytes": resource.getrlimit(resource.RLIMIT_AS)[0],
        "file_bytes": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
    }


def connect(db: str, req: dict[str, Any], steps: int, cpu_s: float) -> tuple[sqlite3.Connection, Budget]:
    """A confined connection: authorizer, length limit, no ATTACH, temp storage in memory."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(req["length_mb"]) * 1024 * 1024)
    # Journal in memory (an error still rolls back in-process; after a crash the copy is
    # discarded), no fsync, temp tables and sorts in memory so no host temp file grows.
    for pragma in ("temp_store = MEMORY", "journal_mode = MEMORY", "synchronous = OFF", "cache_size = -65536"):
        conn.execute(f"PRAGMA {pragma}")
    # The database is the one file that grows, so SQLite itself stops it at the file-size limit
    # (SQLITE_FULL: the statement fails, the transaction rolls back). RLIMIT_FSIZE is only the
    # backstop: a write it refuses is an I/O error that leaves the pager unable to play back an
    # in-memory journal, so the file would stay half-written.
    if int(req["file_mb"]) > 0:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {int(req['file_mb']) * 2**20 // page}")
    conn.set_authorizer(authorizer)
    return conn, Budget(conn, steps, cpu_s, req.get("cap_s"))


QUOTE = re.compile("['\"`]")
"""Where SQLite quotes computed text (a JSON path, the token after `near`, a value), which may
hold held-out values; a quoted value may hold quotes itself, so all from the first quote goes."""


def message(error: BaseException, req: dict[str, Any], budget: Budget | None = None) -> str:
    """Why a statement failed, naming the limit it hit, quoting nothing it computed."""
    if budget is not None and budget.over:
        return budget.over
    if isinstance(error, MemoryError):
        return f"out of memory (the address-space limit is {req['memory_mb']} MiB)"
    lines = str(error).splitlines()
    first = lines[0] if lines else type(error).__name__
    quoted = QUOTE.search(first)
    if quoted:
        tail = ": syntax error" if first.endswith(": syntax error") else ""
        first = first[: quoted.start()] + "<...>" + tail
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL and int(req["file_mb"]) > 0:
        return f"file-size limit reached ({req['file_mb']} MiB, the database may not grow past it)"
    if "too big" in first:
        first += f" (the string and blob length limit is {req['length_mb']} MiB)"
    elif code == sqlite3.SQLITE_IOERR:
        first += f" (the file-size limit is {req['file_mb']} MiB: the database may not grow past it)"
    return first[:ERROR_CHARS]


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def migrate(db: str, statements: list[str], req: dict[str, Any], budget: dict[str, Any]) -> dict[str, Any]:
    """Run the statements in one transaction and close the connection; the costs, and on error why."""
    before = digest(db)
    conn, spent = connect(db, req, int(budget["steps"]), float(budget["cpu_s"]))
    index = 0
    try:
        conn.execute("BEGIN")
        for index, statement in enumerate(statements, start=1):
            conn.execute(statement).fetchall()
        conn.execute("COMMIT")
    except (sqlite3.Error, MemoryError, ValueError, OverflowError) as error:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        conn.close()
        return {
            "status": "error",
            "statement": index,
            "error": message(error, req, spent),
            "unchanged": digest(db) == before,
            "steps": spent.steps,
            "cpu_s": spent.cpu(),
        }
    conn.close()
    return {"status": "ok", "steps": spent.steps, "cpu_s": spent.cpu(), "file_bytes": os.path.getsize(db)}


def _rows(
    db: str, req: dict[str, Any], plan: dict[str, Any], steps: int, cpu_s: float
) -> tuple[list[dict[str, Any]], Budget]:
    """Compare every reference object; a read that fails counts all its rows as lost."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS " + plan["alias"], (f"file:{plan['path']}?mode=ro",))
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 1)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(req["length_mb"]) * 1024 * 1024)
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(authorizer)
    budget = Budget(conn, steps, cpu_s, req.get("cap_s"))
    out = []
    present = {
        r[0].lower() for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')")
    }
    for obj in plan["objects"]:
        lost = {
            "name": obj["name"],
            "expected": obj["rows"],
            "matched": 0,
            "wrong": 0,
            "lost": obj["rows"],
            "extra": 0,
            "columns": {},
            "bad_keys": None,
        }
        if obj["name"].lower() not in present:
            out.append({**lost, "error": "missing"})
            continue
        try:
            out.append(reads.compare(conn, plan["alias"], obj))
        except (sqlite3.Error, MemoryError) as error:
            out.append({**lost, "error": message(error, req, budget)})
    conn.close()
    return out, budget


def check(db: str, w: dict[str, Any], req: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """Every read of the delivered file, on fresh connections after the migration's closed."""
    budget = w["budget"]
    report: dict[str, Any] = {"status": "ok"}
    conn, spent = connect(db, req, int(budget["read_steps"]), float(budget["read_cpu_s"]))
    try:
        report["integrity"] = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        report["fk_violations"] = len(fk)
        report["fk_tables"] = sorted({str(r[0])[:128] for r in fk})[:5]
    except (sqlite3.Error, MemoryError) as error:
        conn.close()
        return {**report, "status": "integrity", "error": message(error, req, spent)}
    try:
        report["facts"] = reads.facts(conn, w, before, lambda e: message(e, req))
        report["battery"] = reads.battery(conn, w["battery"]) if w.get("battery") else []
    except (sqlite3.Error, MemoryError) as error:
        conn.close()
        return {**report, "status": "unreadable", "error": message(error, req, spent), "read_steps": spent.steps}
    conn.close()
    report["rows"], more = (
        ([], None)
        if w.get("plan") is None
        else _rows(
            db, req, w["plan"], int(budget["read_steps"]) - spent.steps, float(budget["read_cpu_s"]) - spent.cpu()
        )
    )
    report["read_steps"] = spent.steps + (more.steps if more else 0)
    report["read_cpu_s"] = spent.cpu() + (more.cpu() if more else 0.0)
    return report


def run_world(w: dict[str, Any], req: dict[str, Any], statements: list[str]) -> dict[str, Any]:
    """Migrate one world's database (a file in the working directory) and read it back."""
    db = w["db"]
    conn = sqlite3.connect(db, isolation_level=None)
    before = reads.snapshot(conn, w.get("untouched", []))
    conn.close()
    ran = migrate(db, statements, req, w["budget"])
    if ran["status"] != "ok":
        return {"name": w["name"], **ran}
    return {"name": w["name"], **ran, **check(db, w, req, before)}


def main() -> None:
    req = pickle.load(sys.stdin.buffer)
    limit(req)
    report: dict[str, Any] = {"limits": in_force(), "worlds": []}
    for w in req["worlds"]:
        world = run_world(w, req, req["statements"])
        report["worlds"].append(world)
        if world["status"] != "ok":
            break  # a migration that failed once scores 0: the other worlds would change nothing
    sys.stdout.write(json.dumps(report))


if __name__ == "__main__":
    main()
