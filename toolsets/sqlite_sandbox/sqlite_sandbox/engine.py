"""The SQLite operations behind the sandbox tools, run inside the agent's container.

Standard library only: the toolset ships this file's source into the box and runs it as
`python3 -I -c <source> <request-json or @request-file>`, printing one JSON reply. The grader imports
`split_statements` and `classify` from here so the sandbox and the grader agree on what a
statement is and on which transaction-control statements are ignored or refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import Any

ROW_LIMIT = 50
CELL_LIMIT = 200
BUSY_TIMEOUT_S = 5.0

IGNORED = "ignored"
"""BEGIN / COMMIT / END: every execute call and the graded migration already run as one
transaction, so these are skipped (and reported)."""
REFUSED = "refused"
"""A bare ROLLBACK, ATTACH, DETACH, VACUUM: refused with an error."""
PLAIN = "plain"


class Refused(Exception):
    """A statement this sandbox does not run; the message says why."""


def _skip_space_and_comments(sql: str, i: int) -> int:
    while i < len(sql):
        if sql[i].isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = len(sql) if end < 0 else end + 2
        else:
            break
    return i


def keywords(statement: str, count: int = 3) -> list[str]:
    """The first `count` words of a statement, upper-cased, skipping comments."""
    words: list[str] = []
    i = 0
    while len(words) < count:
        i = _skip_space_and_comments(statement, i)
        j = i
        while j < len(statement) and (statement[j].isalnum() or statement[j] == "_"):
            j += 1
        if j == i:
            break
        words.append(statement[i:j].upper())
        i = j
    return words


def is_blank(statement: str) -> bool:
    """Whether a chunk holds nothing but whitespace, comments and semicolons."""
    i = 0
    while True:
        i = _skip_space_and_comments(statement, i)
        if i < len(statement) and statement[i] == ";":
            i += 1
            continue
        return i >= len(statement)


_CLOSING = {"'": "'", '"': '"', "`": "`", "[": "]", "--": "\n", "/*": "*/"}


_SPACE = frozenset(" \t\n\f\r")


def _is_id_char(ch: str) -> bool:
    """What SQLite's tokenizer counts as part of a word (its `IdChar`)."""
    return (ch.isascii() and (ch.isalnum() or ch in "_$")) or ord(ch) >= 0x80


def _bare_semicolons(sql: str) -> list[tuple[int, bool]]:
    """The semicolons outside strings, quoted names and comments (only those can end a statement),
    each with whether `; END` precedes it, comments and whitespace aside (inside a trigger body only
    such a semicolon can end the statement); one pass, so splitting stays linear in the script."""
    out: list[tuple[int, bool]] = []
    last, before = "", ""  # the last two tokens: ";", "END" or "" (anything else)
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        opener = sql[i : i + 2] if sql[i : i + 2] in ("--", "/*") else ch
        closing = _CLOSING.get(opener)
        if ch == ";":
            out.append((i, (before, last) == (";", "END")))
            token, i = ";", i + 1
        elif closing is not None:
            end = sql.find(closing, i + len(opener))
            if end < 0:
                break
            i = end + len(closing)
            if opener in ("--", "/*"):
                continue
            token = ""
        elif ch in _SPACE:
            i += 1
            continue
        elif _is_id_char(ch):
            j = i + 1
            while j < n and _is_id_char(sql[j]):
                j += 1
            token, i = ("END" if sql[i:j].upper() == "END" else ""), j
        else:
            token, i = "", i + 1
        before, last = last, token
    return out


def split_statements(sql: str) -> list[str]:
    """Split a script into statements the way SQLite's tokenizer sees them (semicolons inside
    strings, comments and trigger bodies do not split); a trailing statement may omit its `;`.

    `sqlite3.complete_statement` decides, but is asked at most twice per statement: at the first
    bare semicolon, and, if that leaves it open (a trigger body), at the first `; END;` after it."""
    statements: list[str] = []
    start, in_trigger = 0, False
    for pos, ends_trigger in _bare_semicolons(sql):
        if in_trigger and not ends_trigger:
            continue
        chunk = sql[start : pos + 1]
        in_trigger = not sqlite3.complete_statement(chunk)
        if not in_trigger:
            if not is_blank(chunk):
                statements.append(chunk.strip())
            start = pos + 1
    rest = sql[start:]
    if not is_blank(rest):
        statements.append(rest.strip())
    return statements


def classify(statement: str) -> str:
    """IGNORED, REFUSED or PLAIN (see the constants)."""
    words = keywords(statement)
    head = words[0] if words else ""
    if head in ("BEGIN", "COMMIT", "END"):
        return IGNORED
    if head == "ROLLBACK":
        rest = words[1:]
        if rest[:1] == ["TRANSACTION"]:
            rest = rest[1:]
        return PLAIN if rest[:1] == ["TO"] else REFUSED
    if head in ("ATTACH", "DETACH", "VACUUM"):
        return REFUSED
    return PLAIN


def refusal(statement: str) -> str:
    """Why a REFUSED statement is refused, phrased for the agent."""
    head = keywords(statement, 1)[0]
    if head == "ROLLBACK":
        return (
            "a bare ROLLBACK is not allowed: each call (and the graded migration) is already "
            "all-or-nothing; use the rollback or restore tool to undo earlier calls"
        )
    return f"{head} is not allowed here (the grader refuses it too); work on the one database only"


def first_refused(statements: Sequence[str]) -> tuple[int, str] | None:
    """(1-based index, reason) of the first statement refused here and by the grader, or None."""
    return next(((i, refusal(st)) for i, st in enumerate(statements, start=1) if classify(st) == REFUSED), None)


def _cell(value: object) -> object:
    if isinstance(value, bytes):
        return {"blob": value[:CELL_LIMIT].hex(), "bytes": len(value)}
    if isinstance(value, str) and len(value) > CELL_LIMIT:
        return {"text": value[:CELL_LIMIT], "chars": len(value)}
    return value


def _connect(db: str, must_exist: bool = True) -> sqlite3.Connection:
    if must_exist and not os.path.exists(db):
        raise FileNotFoundError(f"the database file {db} is missing; use restore('start') to bring it back")
    return sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)


def execute(db: str, sql: str, deadline_s: float = 15.0, row_limit: int = ROW_LIMIT) -> dict[str, Any]:
    """Run every statement of `sql` in one transaction; any error rolls the whole call back."""
    statements = split_statements(sql)
    if not statements:
        return {"ok": False, "error": "no SQL statement given", "statement": 0}
    conn = _connect(db)
    deadline = time.monotonic() + deadline_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    results: list[dict[str, Any]] = []
    ignored: list[int] = []
    index = 0
    try:
        conn.execute("BEGIN IMMEDIATE")
        for index, statement in enumerate(statements, start=1):
            kind = classify(statement)
            if kind == IGNORED:
                ignored.append(index)
                continue
            if kind == REFUSED:
                raise Refused(refusal(statement))
            before = conn.total_changes
            cursor = conn.execute(statement)
            entry: dict[str, Any] = {"statement": index, "sql": statement[:120]}
            if cursor.description is not None:
                fetched = cursor.fetchmany(row_limit + 1)
                entry["columns"] = [d[0] for d in cursor.description]
                entry["rows"] = [[_cell(v) for v in row] for row in fetched[:row_limit]]
                entry["truncated"] = len(fetched) > row_limit
            entry["changes"] = conn.total_changes - before
            results.append(entry)
        conn.execute("COMMIT")
        return {"ok": True, "results": results, "ignored": ignored, "statements": len(statements)}
    except (sqlite3.Error, Refused) as error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        message = str(error)
        if message == "interrupted":
            message = f"the call ran longer than {deadline_s:g} s and was cancelled"
        return {
            "ok": False,
            "error": message,
            "statement": index,
            "sql": statements[index - 1][:200] if index else "",
            "statements": len(statements),
        }
    finally:
        conn.close()


def copy_database(source: str, target: str) -> None:
    """Copy a database page by page with SQLite's backup API (safe while others read it)."""
    src = _connect(source)
    dst = _connect(target, must_exist=False)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def checkpoint(db: str, path: str) -> dict[str, Any]:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial"
    copy_database(db, partial)
    os.replace(partial, path)
    return {"ok": True}


def restore(db: str, path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {"ok": False, "error": "that checkpoint's file is gone from the container"}
    copy_database(path, db)
    return {"ok": True}


def schema(db: str) -> dict[str, Any]:
    conn = _connect(db)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%' AND sql IS NOT NULL "
            "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, name"
        ).fetchall()
        counts = {
            name: conn.execute(f'SELECT count(*) FROM "{name.replace(chr(34), chr(34) * 2)}"').fetchone()[0]
            for kind, name, _, _ in objects
            if kind == "table"
        }
    finally:
        conn.close()
    return {
        "ok": True,
        "objects": [{"type": t, "name": n, "table": tb, "sql": s} for t, n, tb, s in objects],
        "row_counts": counts,
    }


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Dispatch one request: {"op": "execute"|"checkpoint"|"restore"|"schema", ...}."""
    op = request.get("op")
    try:
        if op == "execute":
            return execute(request["db"], request["sql"], request.get("deadline_s", 15.0))
        if op == "checkpoint":
            return checkpoint(request["db"], request["path"])
        if op == "restore":
            return restore(request["db"], request["path"])
        if op == "schema":
            return schema(request["db"])
    except (sqlite3.Error, OSError) as error:
        return {"ok": False, "error": str(error)}
    return {"ok": False, "error": f"unknown operation {op!r}"}


def load_request(argument: str) -> dict[str, Any]:
    """The request given inline as JSON, or as `@path` of a JSON file (read once, then removed)."""
    if not argument.startswith("@"):
        return dict(json.loads(argument))
    try:
        with open(argument[1:], encoding="utf-8") as f:
            return dict(json.load(f))
    finally:
        os.unlink(argument[1:])


def main() -> None:
    reply = handle(load_request(sys.argv[1]))
    sys.stdout.write(json.dumps(reply, ensure_ascii=False))


if __name__ == "__main__":
    main()
