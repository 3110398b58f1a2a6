"""Child process that runs one migration and every read of its result, confined; standard library only.

Started as `python -I -S jail_child.py` in the scratch directory. It reads two pickled messages
from the grader (trusted) on stdin: the request (build plan, statements, probes, limits), and later
the reference rows to compare with (or None). It builds the held-out database, runs the migration
on its own connection and closes it, so no TEMP object survives; every check then reads the
delivered FILE through fresh connections: integrity, schema facts (PRAGMAs only, no parsing of
agent SQL here or in the grader), CHECK probes, rows. It prints one JSON report.

Confinement, the same on a busy machine as on an idle one: SQLite VM steps counted by the progress
handler (per phase) and RLIMIT_CPU for the process; RLIMIT_AS, SQLITE_LIMIT_LENGTH, RLIMIT_FSIZE,
temp storage in memory (no host temp files); an authorizer refusing ATTACH/DETACH, all but a few
PRAGMAs and dangerous functions; no attachable database while agent SQL runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import re
import resource
import sqlite3
import sys
from typing import Any, BinaryIO, Literal

__all__ = ["Affinity", "affinity", "main"]

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
MAX_OBJECTS = 200
"""Names of extra tables and triggers listed at most (their count is always exact)."""
MAX_COLUMNS = 200
NAME_CHARS = 128
ERROR_CHARS = 300


Affinity = Literal["INTEGER", "TEXT", "REAL", "NUMERIC", "BLOB"]


def affinity(declared: str) -> Affinity:
    """SQLite's type-affinity rules (section 3.1 of the datatype documentation); the grader's
    target schema uses the same function (`schema.affinity`)."""
    t = declared.upper()
    if "INT" in t:
        return "INTEGER"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in t or not t.strip():
        return "BLOB"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class StepBudget:
    """Interrupts a connection's statements once `steps` SQLite VM steps are spent (deterministic:
    the same migration hits it at the same point whatever the machine's load)."""

    def __init__(self, conn: sqlite3.Connection, steps: int) -> None:
        self.ticks = 0
        self.limit = max(1, steps // TICK)
        conn.set_progress_handler(self._tick, TICK)

    def _tick(self) -> int:
        self.ticks += 1
        return int(self.ticks > self.limit)


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


def connect(db: str, req: dict[str, Any], steps: int) -> tuple[sqlite3.Connection, StepBudget]:
    """A confined connection: authorizer, length limit, no ATTACH, temp storage in memory."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(req["length_mb"]) * 1024 * 1024)
    # Journal in memory (an error still rolls back in-process; after a crash the copy is
    # discarded), no fsync, temp tables and sorts in memory so no host temp file grows.
    for pragma in ("temp_store = MEMORY", "journal_mode = MEMORY", "synchronous = OFF", "cache_size = -131072"):
        conn.execute(f"PRAGMA {pragma}")
    conn.set_authorizer(authorizer)
    return conn, StepBudget(conn, steps)


QUOTE = re.compile("['\"`]")
"""Where SQLite quotes computed text (a JSON path, the token after `near`, a value), which may
hold held-out values; a quoted value may hold quotes itself, so all from the first quote goes."""


def message(error: BaseException, budget: StepBudget | None = None) -> str:
    if budget is not None and budget.ticks > budget.limit:
        return f"step limit reached ({budget.limit * TICK:,} SQLite VM steps)"
    lines = str(error).splitlines()
    first = lines[0] if lines else type(error).__name__
    quoted = QUOTE.search(first)
    if quoted:
        tail = ": syntax error" if first.endswith(": syntax error") else ""
        first = first[: quoted.start()] + "<...>" + tail
    return first[:ERROR_CHARS]


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build(db: str, plan: dict[str, Any]) -> None:
    """Create the database from a `dbfile.BuildPlan` given as a dict (trusted SQL, no step limit)."""
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


def migrate(db: str, req: dict[str, Any]) -> dict[str, Any] | None:
    """Run the statements in one transaction and close the connection; a report on error, else
    None (and the VM steps used, in `req["steps_used"]`)."""
    before = digest(db)
    conn, budget = connect(db, req, int(req["steps"]))
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
        return {"status": "error", "statement": index, "error": message(error, budget), "unchanged": digest(db) == before}
    conn.close()
    req["steps_used"] = budget.ticks * TICK
    return None


def _name(value: object) -> str:
    return str(value)[:NAME_CHARS]


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


def snapshot(db: str, untouched: list[str]) -> dict[str, Any]:
    """Before the migration (trusted data only): the stored SQL of each untouched object, and a
    digest of each untouched view's rows (order-free)."""
    conn = sqlite3.connect(db, isolation_level=None)
    out: dict[str, Any] = {"sql": {}, "view_rows": {}}
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM main.sqlite_master"):
        if name in untouched:
            out["sql"][name] = _normal(sql)
            if kind == "view":
                out["view_rows"][name] = view_digest(conn, name)
    conn.close()
    return out


def view_digest(conn: sqlite3.Connection, name: str) -> str:
    rows = sorted(repr(r) for r in conn.execute(f"SELECT * FROM main.{quote(name)}"))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _table_facts(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    columns = conn.execute("SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?, 'main') LIMIT ?", (name, MAX_COLUMNS)).fetchall()
    indexes = []
    for _, index, unique, origin, partial in conn.execute("SELECT seq, name, \"unique\", origin, partial FROM pragma_index_list(?, 'main') LIMIT ?", (name, MAX_OBJECTS)).fetchall():
        keys = conn.execute("SELECT name, coll FROM pragma_index_xinfo(?, 'main') WHERE key = 1 LIMIT ?", (index, MAX_COLUMNS)).fetchall()
        indexes.append({"unique": bool(unique), "partial": bool(partial), "columns": [None if c is None else _name(c) for c, _ in keys], "collations": [_name(k) for _, k in keys]})
    fks = conn.execute("SELECT id, \"from\", \"table\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?, 'main') LIMIT ?", (name, MAX_COLUMNS)).fetchall()
    return {
        "columns": [{"name": _name(c), "affinity": affinity(t or ""), "notnull": bool(nn), "pk": pk, "hidden": h} for c, t, nn, pk, h in columns],
        "indexes": indexes,
        "fks": [[fid, _name(src), _name(parent), None if to is None else _name(to), upd, dele] for fid, src, parent, to, upd, dele in fks],
    }


def facts(conn: sqlite3.Connection, req: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """What the delivered schema is, from sqlite_master and PRAGMAs (SQLite's own parser only):
    the named tables and views looked up directly (however many other objects there are), the
    names and exact count of all tables and triggers, and whether each untouched object's stored
    SQL and each untouched view's rows are as before."""
    out: dict[str, Any] = {"tables": {}, "views": {}, "unchanged": {}}
    user = "name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    for kind in ("table", "trigger"):
        out[f"{kind}_count"] = conn.execute(f"SELECT count(*) FROM main.sqlite_master WHERE type = ? AND {user}", (kind,)).fetchone()[0]
        listed = conn.execute(f"SELECT name, tbl_name FROM main.sqlite_master WHERE type = ? AND {user} ORDER BY name LIMIT ?", (kind, MAX_OBJECTS)).fetchall()
        out[f"{kind}s_listed"] = [[_name(n), _name(t)] for n, t in listed]
    lookup = "SELECT type, name FROM main.sqlite_master WHERE name = ? COLLATE NOCASE"
    for wanted in req.get("tables", []):
        found = conn.execute(lookup, (wanted,)).fetchone()
        if found is not None and found[0] == "table":
            out["tables"][_name(found[1])] = _table_facts(conn, found[1])
    for wanted in req.get("views", []):
        found = conn.execute(lookup, (wanted,)).fetchone()
        if found is None or found[0] != "view":
            continue
        try:
            cols = [_name(r[0]) for r in conn.execute("SELECT name FROM pragma_table_xinfo(?, 'main') LIMIT ?", (found[1], MAX_COLUMNS))]
            out["views"][_name(found[1])] = {"columns": cols, "error": ""}
        except sqlite3.Error as error:  # e.g. a view over a dropped table
            out["views"][_name(found[1])] = {"columns": [], "error": message(error)}
    for name, sql in before["sql"].items():
        row = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (name,)).fetchone()
        out["unchanged"][name] = row is not None and _normal(row[0]) == sql
    for name, digest_before in before["view_rows"].items():
        try:
            same = out["unchanged"][name] and view_digest(conn, name) == digest_before
        except sqlite3.Error:
            same = False
        out["unchanged"][name + " rows"] = same
    return out


def probe(conn: sqlite3.Connection, sql: str) -> bool:
    """Whether the statement failed; always undone (a trigger's RAISE(ROLLBACK) may undo it first)."""
    conn.execute("BEGIN")
    try:
        conn.execute(sql)
        failed = False
    except sqlite3.Error:
        failed = True
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    return failed


def _same(got: object, want: object, real: bool) -> bool:
    if got is None or want is None:
        return got is want
    if real and isinstance(got, (int, float)) and isinstance(want, (int, float)) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    return type(got) is type(want) and got == want


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def compare(conn: sqlite3.Connection, alias: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Rows of one delivered table or view against its reference table, keyed on one column.

    Exact matches are counted in SQL (`+a IS +e` applies no affinity, so 1 and '1' differ; typeof
    must agree outside REAL columns, so 1803391.9999999998 is not 1803392); the mismatches are
    re-compared here with a tolerance on REAL columns only. The result holds counts and column
    names, never a value."""
    name, cols, k, real = obj["name"], obj["columns"], obj["key"], obj["real"]
    e = f"{alias}.{quote(obj['table'])}"
    actual = [f"a.{quote(c)}" for c in cols]
    same = " AND ".join(
        f"+{a} IS +e.c{j}" + ("" if real[j] else f" AND typeof({a}) = typeof(e.c{j})") for j, a in enumerate(actual)
    )
    on = f"{actual[k]} = e.c{k}"
    a_count = conn.execute(f"SELECT count(*) FROM main.{quote(name)}").fetchone()[0]
    found, exact = conn.execute(
        f"SELECT count(DISTINCT e.c{k}), count(DISTINCT CASE WHEN {same} THEN e.c{k} END) FROM {e} AS e JOIN main.{quote(name)} AS a ON {on}"
    ).fetchone()
    near = 0
    columns: dict[str, int] = {}
    differing = f"SELECT {', '.join(actual)}, e.* FROM {e} AS e JOIN main.{quote(name)} AS a ON {on} WHERE NOT ({same})"
    for row in conn.execute(differing):
        got, want = row[: len(cols)], row[len(cols) :]
        bad = [c for j, c in enumerate(cols) if not _same(got[j], want[j], real[j])]
        if not bad:
            near += 1
        for c in bad:
            columns[c] = columns.get(c, 0) + 1
    expected = conn.execute(f"SELECT count(*) FROM {e}").fetchone()[0]
    matched = min(found, exact + near)
    return {"name": name, "expected": expected, "matched": matched, "wrong": found - matched, "lost": expected - found, "extra": max(0, a_count - found), "columns": columns, "error": ""}


def rows(db: str, req: dict[str, Any], plan: dict[str, Any], spent: int) -> tuple[list[dict[str, Any]], int]:
    """Compare every reference object, with the read steps left after `spent`; a read that fails
    counts all its rows as lost. Also returns the steps this took."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS " + plan["alias"], (f"file:{plan['path']}?mode=ro",))
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 1)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(req["length_mb"]) * 1024 * 1024)
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA query_only = ON")
    conn.set_authorizer(authorizer)
    budget = StepBudget(conn, int(req["read_steps"]) - spent)
    out = []
    present = {r[0].lower() for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')")}
    for obj in plan["objects"]:
        if obj["name"].lower() not in present:
            out.append({"name": obj["name"], "expected": obj["rows"], "matched": 0, "wrong": 0, "lost": obj["rows"], "extra": 0, "columns": {}, "error": "missing"})
            continue
        try:
            out.append(compare(conn, plan["alias"], obj))
        except (sqlite3.Error, MemoryError) as error:
            out.append({"name": obj["name"], "expected": obj["rows"], "matched": 0, "wrong": 0, "lost": obj["rows"], "extra": 0, "columns": {}, "error": message(error, budget)})
    conn.close()
    return out, budget.ticks * TICK


def check(db: str, req: dict[str, Any], stdin: BinaryIO, before: dict[str, Any]) -> dict[str, Any]:
    """Every read of the delivered file, on fresh connections after the migration's closed."""
    report: dict[str, Any] = {"status": "ok", "limits": in_force(), "steps": req["steps_used"]}
    conn, budget = connect(db, req, int(req["read_steps"]))
    try:
        report["integrity"] = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    except (sqlite3.Error, MemoryError) as error:
        conn.close()
        return {**report, "status": "integrity", "error": message(error, budget)}
    report["fk_violations"] = len(fk)
    report["fk_tables"] = sorted({_name(r[0]) for r in fk})[:5]
    try:
        report["facts"] = facts(conn, req, before)
        report["probes"] = [probe(conn, sql) for sql in req["probes"]]
    except (sqlite3.Error, MemoryError) as error:
        conn.close()
        return {**report, "status": "unreadable", "error": message(error, budget)}
    conn.close()
    spent = budget.ticks * TICK
    plan = pickle.load(stdin)
    report["rows"], more = ([], 0) if plan is None else rows(db, req, plan, spent)
    report["read_steps"] = spent + more
    return report


def run(req: dict[str, Any], stdin: BinaryIO) -> dict[str, Any]:
    db = req["db"]
    if req.get("build"):
        build(db, req["build"])
    before = snapshot(db, req.get("untouched", []))
    return migrate(db, req) or check(db, req, stdin, before)


def main() -> None:
    stdin = sys.stdin.buffer
    req = pickle.load(stdin)
    limit(req)
    sys.stdout.write(json.dumps(run(req, stdin)))


if __name__ == "__main__":
    main()
