"""One incident's log store: SQLite with FTS5 and a per-minute rollup, built once, then read-only.

The writer (`ensure_store`, host side) builds into a temp file in the cache dir and renames it
into place under an exclusive file lock, so concurrent rollouts of one incident share a single
build and never open a half-written file. Readers (`LogStore`) open the file immutable. A count
without a text filter reads whole minutes from the rollup and only the partial edge minutes from
the raw table, so it costs milliseconds even on a 1M-line incident.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

__all__ = [
    "GROUP_BYS",
    "LEVELS",
    "QUERY_DEADLINE_S",
    "SEARCH_TOTAL_CAP",
    "GroupBy",
    "InvalidQuery",
    "Level",
    "LogLine",
    "LogStore",
    "Query",
    "QueryTooCostly",
    "Row",
    "build_store",
    "ensure_store",
    "format_ts",
]

Level = Literal["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]
"""A log level, least severe first."""
GroupBy = Literal["service", "level", "minute"]
"""What a count groups its lines by."""
LEVELS: tuple[Level, ...] = get_args(Level)
GROUP_BYS: tuple[GroupBy, ...] = get_args(GroupBy)
SEARCH_TOTAL_CAP = 10_000
"""A search counts its matches up to this many, then reports the total as a lower bound."""
QUERY_DEADLINE_S = 2.0
"""Wall-clock seconds one search or count may run before SQLite is interrupted."""
_PROGRESS_STEPS = 10_000
"""SQLite VM steps between deadline checks (well under a millisecond of work)."""
SCHEMA_VERSION = 2
"""Bumped whenever the schema or indexes change; part of the file name and of `meta`, so a store
cached by an older build is rebuilt, never reused."""
_MINUTE = 60_000
_KEY = re.compile(r"[A-Za-z0-9_.-]{1,128}")

Row = tuple[int, str, str, str, str, str]
"""(timestamp in epoch ms, level name, service, instance, trace id, message)"""

_SCHEMA = """
CREATE TABLE services(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE logs(id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, level INTEGER NOT NULL,
                  service_id INTEGER NOT NULL, instance TEXT NOT NULL, trace TEXT NOT NULL,
                  message TEXT NOT NULL);
CREATE VIRTUAL TABLE logs_fts USING fts5(message, content='', columnsize=0);
CREATE TABLE minute_counts(minute INTEGER NOT NULL, service_id INTEGER NOT NULL, level INTEGER NOT NULL,
                           n INTEGER NOT NULL, PRIMARY KEY(minute, service_id, level)) WITHOUT ROWID;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_INDEXES = """
CREATE INDEX logs_ts ON logs(ts, level, service_id);
CREATE INDEX logs_service_ts ON logs(service_id, ts, level);
CREATE INDEX logs_level_ts ON logs(level, ts, service_id);
CREATE INDEX logs_trace ON logs(trace);
INSERT INTO logs_fts(rowid, message) SELECT id, message FROM logs;
INSERT INTO minute_counts SELECT ts / 60000, service_id, level, count(*) FROM logs GROUP BY 1, 2, 3;
ANALYZE;
"""


class InvalidQuery(ValueError):
    """The query cannot run as given (malformed full-text syntax, unknown grouping)."""


class QueryTooCostly(RuntimeError):
    """The query ran past its deadline and was interrupted."""


@dataclass(frozen=True)
class Query:
    start_ms: int
    """Inclusive."""
    end_ms: int
    """Exclusive."""
    service: str | None = None
    min_level: Level | None = None
    """The least severe level; lines at this level or more severe match."""
    text: str | None = None
    """An FTS5 query over the message."""
    trace: str | None = None
    """An exact trace id: only that request's lines."""


@dataclass(frozen=True)
class LogLine:
    ts_ms: int
    level: str
    service: str
    instance: str
    trace: str
    message: str

    def render(self) -> str:
        return f"{format_ts(self.ts_ms)} {self.level} {self.service} {self.instance} trace={self.trace} {self.message}"


def format_ts(ms: int) -> str:
    """`2024-03-05T14:03:22.123Z`"""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def ensure_store(cache_dir: Path, key: str, rows: Callable[[], Iterable[Row]], meta: dict[str, str]) -> Path:
    """The store for `key` in `cache_dir`, building it from `rows()` if no build exists yet.

    Raises:
        ValueError: `key` is not a plain file-name stem.
    """
    if not _KEY.fullmatch(key):
        raise ValueError(f"store key must match {_KEY.pattern}, got {key!r}")
    final = cache_dir / f"{key}.v{SCHEMA_VERSION}.sqlite"
    if final.exists():
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if final.exists():  # another process built it while we waited
                return final
            fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{key}.", suffix=".building")
            os.close(fd)
            try:
                build_store(Path(tmp), rows(), meta)
                os.replace(tmp, final)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return final


def build_store(path: Path, rows: Iterable[Row], meta: dict[str, str]) -> int:
    """Write `rows` (in any order) into a fresh store at `path`; returns the number of lines."""
    levels: dict[str, int] = {name: i for i, name in enumerate(LEVELS)}
    service_ids: dict[str, int] = {}

    def encoded() -> Iterable[tuple[int, int, int, str, str, str]]:
        for ts, level, service, instance, trace, message in rows:
            sid = service_ids.setdefault(service, len(service_ids) + 1)
            yield ts, levels[level], sid, instance, trace, message

    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=MEMORY;"
            "PRAGMA cache_size=-262144;" + _SCHEMA
        )
        con.execute("BEGIN")
        con.executemany(
            "INSERT INTO logs(ts, level, service_id, instance, trace, message) VALUES (?,?,?,?,?,?)", encoded()
        )
        con.executemany("INSERT INTO services(id, name) VALUES (?, ?)", [(i, n) for n, i in service_ids.items()])
        count: int = con.execute("SELECT count(*) FROM logs").fetchone()[0]
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            sorted({**meta, "lines": str(count), "schema": str(SCHEMA_VERSION)}.items()),
        )
        con.execute("COMMIT")
        con.executescript(f"BEGIN; {_INDEXES} COMMIT;")
    finally:
        con.close()
    return count


class LogStore:
    """Read-only queries over one built store; safe to share across threads.

    Each `search` or `count` may run for `deadline_s` wall-clock seconds, then raises QueryTooCostly.
    """

    def __init__(self, path: Path, deadline_s: float = QUERY_DEADLINE_S) -> None:
        self.path = path
        self.deadline_s = deadline_s
        self._local = threading.local()
        con = self._con()
        self._service_ids = dict(con.execute("SELECT name, id FROM services"))
        self._service_names = {i: n for n, i in self._service_ids.items()}
        self.meta = dict(con.execute("SELECT key, value FROM meta"))
        if self.meta.get("schema") != str(SCHEMA_VERSION):
            raise ValueError(
                f"log store {path.name} has schema {self.meta.get('schema', '1')}, this reader "
                f"needs {SCHEMA_VERSION}; rebuild it with ensure_store"
            )

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
            con.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)
            self._local.con = con
        return con

    def _past_deadline(self) -> bool:
        return time.monotonic() > getattr(self._local, "deadline", float("inf"))

    def _start_clock(self) -> None:
        """Give the search or count about to run on this thread its own deadline."""
        self._local.deadline = time.monotonic() + self.deadline_s

    def search(self, q: Query, limit: int) -> tuple[list[LogLine], int, bool]:
        """The first `limit` matching lines, oldest first; the total match count; whether that
        total is only a lower bound (more than SEARCH_TOTAL_CAP matched).

        Raises:
            InvalidQuery: malformed full-text syntax.
            QueryTooCostly: the search ran past the store's deadline.
        """
        self._start_clock()
        where, args = self._where(q)
        sql = f"SELECT ts, level, service_id, instance, trace, message FROM logs WHERE {where} ORDER BY ts, id LIMIT ?"
        rows = self._run(sql, (*args, limit))
        lines = [
            LogLine(ts, LEVELS[lv], self._service_names[sid], inst, tr, msg) for ts, lv, sid, inst, tr, msg in rows
        ]
        if q.text is None:
            total = sum(self._count(q, "level").values())
            return lines, total, False
        capped = self._run(
            f"SELECT count(*) FROM (SELECT 1 FROM logs WHERE {where} LIMIT ?)", (*args, SEARCH_TOTAL_CAP + 1)
        )[0][0]
        return lines, min(capped, SEARCH_TOTAL_CAP), capped > SEARCH_TOTAL_CAP

    def count(self, q: Query, group_by: GroupBy) -> dict[str, int]:
        """Matching lines per group: service name, level name, or minute (ISO, `...:00.000Z`).

        Raises:
            InvalidQuery: malformed full-text syntax or an unknown grouping.
            QueryTooCostly: the count ran past the store's deadline.
        """
        self._start_clock()
        return self._count(q, group_by)

    def _count(self, q: Query, group_by: GroupBy) -> dict[str, int]:
        if group_by not in GROUP_BYS:
            raise InvalidQuery(f"group_by must be one of {', '.join(GROUP_BYS)}")
        key = {"service": "service_id", "level": "level", "minute": "ts / 60000"}[group_by]
        first_full = -(-q.start_ms // _MINUTE)
        last_full = q.end_ms // _MINUTE
        # The rollup has neither message text nor trace ids.
        if q.text is not None or q.trace is not None or first_full >= last_full:
            raw = [(q.start_ms, q.end_ms)]
            rolled: list[tuple[int, int]] = []
        else:
            raw = [(q.start_ms, first_full * _MINUTE), (last_full * _MINUTE, q.end_ms)]
            rolled = self._rolled(
                q, first_full, last_full, {"service": "service_id", "level": "level", "minute": "minute"}[group_by]
            )
        totals: dict[int, int] = {}
        for group, n in rolled:
            totals[group] = totals.get(group, 0) + n
        for start, end in raw:
            if start >= end:
                continue
            where, args = self._where(Query(start, end, q.service, q.min_level, q.text, q.trace))
            for group, n in self._run(f"SELECT {key}, count(*) FROM logs WHERE {where} GROUP BY 1", args):
                totals[group] = totals.get(group, 0) + n
        name: Callable[[int], str] = {
            "service": lambda g: self._service_names[g],
            "level": lambda g: LEVELS[g],
            "minute": lambda g: format_ts(g * _MINUTE),
        }[group_by]
        return {name(g): n for g, n in sorted(totals.items()) if n}

    def _rolled(self, q: Query, first: int, last: int, key: str) -> list[tuple[int, int]]:
        clauses: list[str] = ["minute >= ?", "minute < ?"]
        args: list[int | str] = [first, last]
        self._filters(q, clauses, args)
        return self._run(f"SELECT {key}, sum(n) FROM minute_counts WHERE {' AND '.join(clauses)} GROUP BY 1", args)

    def _where(self, q: Query) -> tuple[str, list[int | str]]:
        clauses: list[str] = ["ts >= ?", "ts < ?"]
        args: list[int | str] = [q.start_ms, q.end_ms]
        self._filters(q, clauses, args)
        if q.trace is not None:
            clauses.append("trace = ?")
            args.append(q.trace)
        if q.text is not None:
            clauses.append("id IN (SELECT rowid FROM logs_fts WHERE logs_fts MATCH ?)")
            args.append(q.text)
        return " AND ".join(clauses), args

    def _filters(self, q: Query, clauses: list[str], args: list[int | str]) -> None:
        if q.service is not None:
            clauses.append("service_id = ?")
            args.append(self._service_ids.get(q.service, -1))  # a service that never logged matches nothing
        if q.min_level is not None:
            clauses.append("level >= ?")
            args.append(LEVELS.index(q.min_level))

    def _run(self, sql: str, args: Iterable[int | str]) -> list[Any]:
        try:
            return self._con().execute(sql, tuple(args)).fetchall()
        except sqlite3.OperationalError as e:
            if self._past_deadline():  # the progress handler interrupted it
                raise QueryTooCostly(f"query interrupted after {self.deadline_s:g} s") from e
            # Only the MATCH argument varies between runs of these fixed statements.
            if "MATCH" in sql:
                raise InvalidQuery("text is not a valid full-text query") from e
            raise
