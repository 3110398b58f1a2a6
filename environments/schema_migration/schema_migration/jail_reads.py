"""The confined child's reads of a migrated database: schema facts, rows against the reference, and the later-write battery; standard library only.

Imported by `jail_child` (inside the confined process, as a sibling module) and by the grader's
in-process reference run (as `schema_migration.jail_reads`). Every function takes a connection the
caller opened and bounded; nothing here parses agent SQL: facts come from PRAGMAs and SQLite's own
query planner.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["MAX_KEYS", "Affinity", "affinity", "battery", "compare", "facts", "quote", "snapshot", "view_digest"]

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


MAX_OBJECTS = 200
"""Names of extra tables and triggers listed at most (their count is always exact)."""
MAX_COLUMNS = 200
NAME_CHARS = 128
MAX_FETCHED = 20
"""Rows of a battery step's own result kept (its lookups return one)."""
MAX_KEYS = 50_000
"""Keys of wrong, lost or extra rows reported per object at most (for the per-class checks)."""
Message = Callable[[BaseException], str]


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _name(value: object) -> str:
    return str(value)[:NAME_CHARS]


def _normal(sql: str | None) -> str:
    return " ".join((sql or "").split())


def view_digest(conn: sqlite3.Connection, name: str) -> str:
    rows = sorted(repr(r) for r in conn.execute(f"SELECT * FROM main.{quote(name)}"))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def snapshot(conn: sqlite3.Connection, untouched: list[str]) -> dict[str, Any]:
    """Before the migration (trusted data only): the stored SQL of each untouched object, and a
    digest of each untouched view's rows (order-free)."""
    out: dict[str, Any] = {"sql": {}, "view_rows": {}}
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM main.sqlite_master"):
        if name in untouched:
            out["sql"][name] = _normal(sql)
            if kind == "view":
                out["view_rows"][name] = view_digest(conn, name)
    return out


def _serves_equality(conn: sqlite3.Connection, table: str, index: str, column: str | None) -> bool:
    """Whether a partial index is usable for every `column = ?` lookup: SQLite's planner accepts
    INDEXED BY only if the query's WHERE implies the index's, so this holds for `WHERE column IS
    NOT NULL` (NULLs never conflict under UNIQUE anyway) and fails for any narrower condition."""
    if column is None:
        return False
    try:
        conn.execute(
            f"EXPLAIN QUERY PLAN SELECT 1 FROM main.{quote(table)} INDEXED BY {quote(index)} WHERE {quote(column)} = ?",
            (0,),
        ).fetchall()
    except sqlite3.Error:
        return False
    return True


def _table_facts(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    columns = conn.execute(
        "SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?, 'main') LIMIT ?", (name, MAX_COLUMNS)
    ).fetchall()
    indexes = []
    for _, index, unique, _origin, partial in conn.execute(
        "SELECT seq, name, \"unique\", origin, partial FROM pragma_index_list(?, 'main') LIMIT ?", (name, MAX_OBJECTS)
    ).fetchall():
        keys = conn.execute(
            "SELECT name, coll FROM pragma_index_xinfo(?, 'main') WHERE key = 1 LIMIT ?", (index, MAX_COLUMNS)
        ).fetchall()
        cols = [None if c is None else _name(c) for c, _ in keys]
        usable = not partial or (len(cols) == 1 and _serves_equality(conn, name, index, keys[0][0]))
        indexes.append(
            {"unique": bool(unique), "partial": not usable, "columns": cols, "collations": [_name(k) for _, k in keys]}
        )
    fks = conn.execute(
        'SELECT id, "from", "table", "to", on_update, on_delete FROM pragma_foreign_key_list(?, \'main\') LIMIT ?',
        (name, MAX_COLUMNS),
    ).fetchall()
    return {
        "columns": [
            {"name": _name(c), "affinity": affinity(t or ""), "notnull": bool(nn), "pk": pk, "hidden": h}
            for c, t, nn, pk, h in columns
        ],
        "indexes": indexes,
        "fks": [
            [fid, _name(src), _name(parent), None if to is None else _name(to), upd, dele]
            for fid, src, parent, to, upd, dele in fks
        ],
    }


def facts(conn: sqlite3.Connection, w: dict[str, Any], before: dict[str, Any], message: Message) -> dict[str, Any]:
    """What the delivered schema is, from sqlite_master and PRAGMAs (SQLite's own parser only):
    the named tables and views looked up directly (however many other objects there are), the
    names and exact count of all tables and triggers, and whether each untouched object's stored
    SQL and each untouched view's rows are as before."""
    out: dict[str, Any] = {"tables": {}, "views": {}, "unchanged": {}}
    user = "name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    for kind in ("table", "trigger"):
        out[f"{kind}_count"] = conn.execute(
            f"SELECT count(*) FROM main.sqlite_master WHERE type = ? AND {user}", (kind,)
        ).fetchone()[0]
        listed = conn.execute(
            f"SELECT name, tbl_name FROM main.sqlite_master WHERE type = ? AND {user} ORDER BY name LIMIT ?",
            (kind, MAX_OBJECTS),
        ).fetchall()
        out[f"{kind}s_listed"] = [[_name(n), _name(t)] for n, t in listed]
    lookup = "SELECT type, name FROM main.sqlite_master WHERE name = ? COLLATE NOCASE"
    for wanted in w.get("tables", []):
        found = conn.execute(lookup, (wanted,)).fetchone()
        if found is not None and found[0] == "table":
            out["tables"][_name(found[1])] = _table_facts(conn, found[1])
    for wanted in w.get("views", []):
        found = conn.execute(lookup, (wanted,)).fetchone()
        if found is None or found[0] != "view":
            continue
        try:
            cols = [
                _name(r[0])
                for r in conn.execute("SELECT name FROM pragma_table_xinfo(?, 'main') LIMIT ?", (found[1], MAX_COLUMNS))
            ]
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


def _same(got: object, want: object, real: bool) -> bool:
    if got is None or want is None:
        return got is want
    if real and isinstance(got, (int, float)) and isinstance(want, (int, float)) and not isinstance(got, bool):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    return type(got) is type(want) and got == want


def compare(conn: sqlite3.Connection, alias: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Rows of one delivered table or view against its reference table, keyed on one column.

    Exact matches are counted in SQL (`+a IS +e` applies no affinity, so 1 and '1' differ; typeof
    must agree outside REAL columns, so 1803391.9999999998 is not 1803392); the mismatches are
    re-compared here with a tolerance on REAL columns only. The result holds counts, column names
    and the keys of the bad rows (for the per-class checks; never shown in a reason)."""
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
    bad_keys: list[Any] = []
    differing = f"SELECT {', '.join(actual)}, e.* FROM {e} AS e JOIN main.{quote(name)} AS a ON {on} WHERE NOT ({same})"
    for row in conn.execute(differing):
        got, want = row[: len(cols)], row[len(cols) :]
        bad = [c for j, c in enumerate(cols) if not _same(got[j], want[j], real[j])]
        if not bad:
            near += 1
        elif len(bad_keys) < MAX_KEYS:
            bad_keys.append(want[k])
        for c in bad:
            columns[c] = columns.get(c, 0) + 1
    expected = conn.execute(f"SELECT count(*) FROM {e}").fetchone()[0]
    matched = min(found, exact + near)
    lost = expected - found
    if lost:
        bad_keys += [
            r[0]
            for r in conn.execute(
                f"SELECT c{k} FROM {e} WHERE c{k} NOT IN (SELECT {quote(cols[k])} FROM main.{quote(name)} WHERE {quote(cols[k])} IS NOT NULL) LIMIT ?",
                (MAX_KEYS,),
            )
        ]
    extra = max(0, a_count - found)
    if extra:
        bad_keys += [
            r[0]
            for r in conn.execute(
                f"SELECT {quote(cols[k])} FROM main.{quote(name)} WHERE {quote(cols[k])} NOT IN (SELECT c{k} FROM {e} WHERE c{k} IS NOT NULL) LIMIT ?",
                (MAX_KEYS,),
            )
        ]
    return {
        "name": name,
        "expected": expected,
        "matched": matched,
        "wrong": found - matched,
        "lost": lost,
        "extra": extra,
        "columns": columns,
        "error": "",
        "bad_keys": bad_keys[:MAX_KEYS],
    }


def _plain(value: object) -> object:
    """A value as JSON carries it (a blob as ["blob", hex]), the same in process and from the child."""
    return ["blob", value.hex()] if isinstance(value, bytes) else value


def _effects(conn: sqlite3.Connection, objects: list[dict[str, Any]], keys: list[Any], counts: list[Any]) -> list[Any]:
    """Per object: (row-count change since `counts`, rows at `keys`), or "error"."""
    out: list[Any] = []
    marks = ", ".join("?" * len(keys))
    for obj, before in zip(objects, counts):
        name, cols, key = quote(obj["name"]), ", ".join(quote(c) for c in obj["columns"]), quote(obj["key"])
        try:
            count = conn.execute(f"SELECT count(*) FROM main.{name}").fetchone()[0]
            rows = conn.execute(
                f"SELECT {cols} FROM main.{name} WHERE {key} IN ({marks}) ORDER BY {key}, {cols}", keys
            ).fetchall()
            out.append([None if before is None else count - before, [[_plain(v) for v in r] for r in rows]])
        except sqlite3.Error:
            out.append("error")
    return out


def battery(conn: sqlite3.Connection, plan: dict[str, Any]) -> list[list[Any]]:
    """Run each scenario in a savepoint, foreign keys enforced, and undo it; per step: [accepted, rows it returned, effects].
    The connection's progress handler bounds the work (a trigger or view of the migration's may run)."""
    conn.execute("PRAGMA foreign_keys = ON")
    objects = plan["objects"]
    counts: list[Any] = []
    for obj in objects:
        try:
            counts.append(conn.execute(f"SELECT count(*) FROM main.{quote(obj['name'])}").fetchone()[0])
        except sqlite3.Error:
            counts.append(None)
    out: list[list[Any]] = []
    for scenario in plan["scenarios"]:
        conn.execute("SAVEPOINT battery")
        steps: list[Any] = []
        for sql, params in scenario["steps"]:
            try:
                fetched = [[_plain(v) for v in r] for r in conn.execute(sql, params).fetchmany(MAX_FETCHED)]
                ok = True
            except sqlite3.Error as error:
                if "interrupted" in str(error):
                    raise  # over the read budget: the caller reports it
                ok, fetched = False, []
            if not conn.in_transaction:  # RAISE(ROLLBACK) in a trigger ended the savepoint
                conn.execute("SAVEPOINT battery")
            steps.append([ok, fetched, _effects(conn, objects, scenario["keys"], counts)])
        conn.execute("ROLLBACK TO battery")
        conn.execute("RELEASE battery")
        out.append(steps)
    return out
