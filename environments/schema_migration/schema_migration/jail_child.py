"""Child process that runs one migration on one scratch database copy, confined; standard library only.

Started as `python -I -S jail_child.py` with a pickled request on stdin (from the grader, trusted)
and the scratch directory as its working directory; builds the held-out database there if asked,
runs the migration, and prints one JSON report. Confinement: CPU-time, address-space, file-size and
open-file limits; an authorizer that refuses ATTACH/DETACH, all but a few harmless PRAGMAs and
dangerous functions (load_extension, readfile, writefile, fts3_tokenizer); zero attachable
databases; temp storage in memory; a wall-clock deadline via the progress handler. VACUUM (INTO)
cannot run inside the transaction, and the parent refuses it before starting.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import resource
import sqlite3
import sys
import time

ALLOWED_PRAGMAS = frozenset(
    {
        "foreign_keys", "defer_foreign_keys", "legacy_alter_table", "recursive_triggers",
        "foreign_key_check", "foreign_key_list", "table_info", "table_xinfo", "index_list",
        "index_info", "index_xinfo", "integrity_check", "quick_check", "user_version",
        "case_sensitive_like", "automatic_index",
    }
)  # fmt: skip
DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "fts3_tokenizer", "edit"})


def authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def limit(req: dict) -> None:
    cpu = int(req["cpu_s"])
    memory = int(req["memory_mb"]) * 1024 * 1024
    fsize = int(req["file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build(db: str, plan: dict) -> None:
    """Create the database from a `dbfile.BuildPlan` given as a dict (before any limit on SQL applies)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("BEGIN")
    for statement in plan["create"]:
        conn.execute(statement)
    for insert, rows in plan["inserts"]:
        conn.executemany(insert, rows)
    for statement in plan["post"]:
        conn.execute(statement)
    conn.execute("COMMIT")
    conn.close()


def run(req: dict) -> dict:
    db = req["db"]
    if req.get("build"):
        build(db, req["build"])
    before = digest(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    # A scratch copy: no fsync, journal in memory (an error still rolls back in-process; after a
    # crash the copy is discarded), a large page cache, temp tables in memory.
    for pragma in ("temp_store = MEMORY", "journal_mode = MEMORY", "synchronous = OFF", "cache_size = -262144"):
        conn.execute(f"PRAGMA {pragma}")
    conn.set_authorizer(authorizer)
    deadline = time.monotonic() + float(req["wall_s"])
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    index = 0
    try:
        conn.execute("BEGIN")
        for index, statement in enumerate(req["statements"], start=1):
            conn.execute(statement).fetchall()
        conn.execute("COMMIT")
    except (sqlite3.Error, MemoryError) as error:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        conn.close()
        message = "time limit reached" if str(error) == "interrupted" else str(error) or type(error).__name__
        return {"status": "error", "statement": index, "error": message, "unchanged": digest(db) == before}
    report: dict = {"status": "ok"}
    report["integrity"] = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()][:5]
    fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    report["fk_violations"] = len(fk)
    report["fk_sample"] = [list(map(str, r)) for r in fk[:3]]
    outcomes = []
    for probe in req["probes"]:
        conn.execute("SAVEPOINT probe")
        try:
            conn.execute(probe)
            outcomes.append({"failed": False, "error": ""})
        except sqlite3.Error as error:
            outcomes.append({"failed": True, "error": str(error)[:200]})
        conn.execute("ROLLBACK TO probe")
        conn.execute("RELEASE probe")
    report["probes"] = outcomes
    conn.close()
    return report


def main() -> None:
    req = pickle.loads(sys.stdin.buffer.read())
    limit(req)
    sys.stdout.write(json.dumps(run(req)))


if __name__ == "__main__":
    main()
