"""Checks a migrated database against the target schema (SQLAlchemy reflection) and the reference rows.

The database is opened read-only, with ATTACH and dangerous functions refused and a deadline on
every query, because its views and triggers were written by the agent.
"""

from __future__ import annotations

import math
import sqlite3
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool
from sqlalchemy.types import NullType

from schema_migration.jail_child import DENIED_FUNCTIONS
from schema_migration.schema import Schema, affinity, quote

READ_DEADLINE_S = 20.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool


@dataclass(frozen=True)
class RowStats:
    expected: int
    matched: int
    wrong: int
    lost: int
    extra: int
    example: str = ""
    """One mismatch, for the reason text."""


def _read_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def open_readonly(path: Path, attach: Mapping[str, Path] | None = None) -> sqlite3.Connection:
    """A read-only connection; `attach` names the grader's own databases to attach first (read-only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    for alias, other in (attach or {}).items():
        conn.execute(f"ATTACH DATABASE ? AS {alias}", (f"file:{other}?mode=ro",))
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, len(attach or {}))
    conn.set_authorizer(_read_authorizer)
    deadline = time.monotonic() + READ_DEADLINE_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return conn


def _affinity_of(sa_type: object) -> str:
    return "BLOB" if isinstance(sa_type, NullType) else affinity(str(sa_type))


def schema_checks(path: Path, target: Schema, probe_results: list[tuple[str, bool]]) -> list[Check]:
    """One Check per expected property; `probe_results` are (description, passed) of CHECK probes."""
    conn = open_readonly(path)
    engine = create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    checks: list[Check] = []
    add = lambda name, ok: checks.append(Check(name, bool(ok)))  # noqa: E731
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            insp = inspect(engine)
            tables = {t.lower(): t for t in insp.get_table_names()}
            views = {v.lower(): v for v in insp.get_view_names()}
            for table in target.tables:
                actual = tables.get(table.name.lower())
                add(f"table {table.name} exists", actual)
                if actual is None:
                    continue
                columns = {c["name"].lower(): c for c in insp.get_columns(actual)}
                wanted = {c.name.lower() for c in table.columns}
                add(f"{table.name} has no unexpected columns", set(columns) <= wanted)
                for col in table.columns:
                    got = columns.get(col.name.lower())
                    add(f"column {table.name}.{col.name} exists", got)
                    if got is None:
                        continue
                    add(f"{table.name}.{col.name} has {col.type} affinity", _affinity_of(got["type"]) == col.type)
                    if not col.primary_key:
                        add(f"{table.name}.{col.name} is {'NOT NULL' if col.notnull else 'nullable'}", got["nullable"] != col.notnull)
                pk = [c.lower() for c in insp.get_pk_constraint(actual)["constrained_columns"]]
                add(f"{table.name} primary key {table.primary_key}", pk == [c.lower() for c in table.primary_key])
                fks = {
                    (tuple(c.lower() for c in fk["constrained_columns"]), fk["referred_table"].lower(), tuple(c.lower() for c in fk["referred_columns"] or ["id"]))
                    for fk in insp.get_foreign_keys(actual)
                }  # fmt: skip
                expected_fks = {((c.name.lower(),), c.references[0].lower(), (c.references[1].lower(),)) for c in table.columns if c.references}
                for fk in expected_fks:
                    add(f"{table.name}.{fk[0][0]} references {fk[1]}({fk[2][0]})", fk in fks)
                add(f"{table.name} has no unexpected foreign keys", fks <= expected_fks)
                unique_sets = {tuple(c.lower() for c in u["column_names"]) for u in insp.get_unique_constraints(actual)}
                indexes = insp.get_indexes(actual)
                unique_sets |= {tuple(c.lower() for c in i["column_names"] if c) for i in indexes if i["unique"]}
                unique_sets.add(tuple(pk))
                any_index = unique_sets | {tuple(c.lower() for c in i["column_names"] if c) for i in indexes}
                for col in table.columns:
                    if col.unique:
                        add(f"{table.name}.{col.name} is unique", (col.name.lower(),) in unique_sets)
                for index in target.indexes_of(table.name):
                    cols = tuple(c.lower() for c in index.columns)
                    label = f"{'unique ' if index.unique else ''}index on {table.name}({', '.join(index.columns)})"
                    add(label, cols in (unique_sets if index.unique else any_index))
            for view in target.views:
                actual = views.get(view.name.lower())
                add(f"view {view.name} exists", actual)
                if actual is not None:
                    try:
                        got = [c["name"].lower() for c in insp.get_columns(actual)]
                    except SQLAlchemyError:
                        got = []  # e.g. a view over a dropped table
                    add(f"view {view.name} has columns {', '.join(view.columns)}", got == [c.lower() for c in view.columns])
            with engine.connect() as connection:
                triggers = {r[0].lower() for r in connection.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))}
            for trigger in target.triggers:
                add(f"trigger {trigger.name} exists", trigger.name.lower() in triggers)
            expected_tables = {t.name.lower() for t in target.tables}
            add("no unexpected tables", set(tables) <= expected_tables)
    finally:
        engine.dispose()
        conn.close()
    checks += [Check(description, passed) for description, passed in probe_results]
    return checks


def _same(got: object, want: object) -> bool:
    if got is None or want is None:
        return got is want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return got == want or math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    return type(got) is type(want) and got == want


def _shape(target: Schema, name: str) -> tuple[tuple[str, ...], int, str]:
    """(columns, key position, key affinity) of a target table or view."""
    if target.has_table(name):
        table = target.table(name)
        key = table.primary_key[0]
        return table.column_names, table.column_names.index(key), table.column(key).type
    view = next(v for v in target.views if v.name == name)
    key = view.key or view.columns[0]
    return view.columns, view.columns.index(key), "INTEGER"


def write_expected(path: Path, target: Schema, expected: Mapping[str, list[tuple]]) -> None:
    """Store the reference rows as tables e0, e1, ... (in `expected` order) for `row_stats` to join.

    Only the key column has a type (so the join can use its index); the others have none, and
    `row_stats` compares `+a IS +b`, which applies no affinity: 1 and '1' differ, 1 and 1.0 match.
    """
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        written: dict[int, tuple[int, int]] = {}
        for i, (name, rows) in enumerate(expected.items()):
            cols, k, key_type = _shape(target, name)
            same = written.get(id(rows))
            if same is not None and same[1] == k:  # e.g. a view showing a table's rows: store once
                conn.execute(f"CREATE VIEW e{i} AS SELECT * FROM e{same[0]}")
                continue
            written[id(rows)] = (i, k)
            defs = ", ".join(f"c{j} {key_type}" if j == k else f"c{j}" for j in range(len(cols)))
            conn.execute(f"CREATE TABLE e{i} ({defs})")
            conn.executemany(f"INSERT INTO e{i} VALUES ({', '.join('?' * len(cols))})", rows)
            conn.execute(f"CREATE INDEX e{i}_key ON e{i}(c{k})")
        conn.commit()
    finally:
        conn.close()


@dataclass(frozen=True)
class _Found:
    matched_keys: int
    """Expected keys present in the database."""
    extra: int
    """Database rows beyond those keys (unexpected keys and duplicates)."""


def _compare(conn: sqlite3.Connection, i: int, name: str, target: Schema) -> tuple[_Found, int, str]:
    """(keys found, rows equal to the reference, one mismatch or missing key) for table/view `name`."""
    cols, k, _ = _shape(target, name)
    present = {r[0].lower() for r in conn.execute("SELECT name FROM pragma_table_info(?)", (name,))}
    actual = [f"a.{quote(c)}" if c.lower() in present else "NULL" for c in cols]
    on = f"{actual[k]} = e.c{k}"
    same = " AND ".join(f"+{a} IS +e.c{j}" for j, a in enumerate(actual))
    a_count = conn.execute(f"SELECT count(*) FROM {quote(name)}").fetchone()[0]
    found, exact = conn.execute(
        f"SELECT count(DISTINCT e.c{k}), count(DISTINCT CASE WHEN {same} THEN e.c{k} END) "
        f"FROM exp.e{i} AS e JOIN {quote(name)} AS a ON {on}"
    ).fetchone()
    near = 0
    example = ""
    differing = f"SELECT {', '.join(actual)}, e.* FROM exp.e{i} AS e JOIN {quote(name)} AS a ON {on} WHERE NOT ({same})"
    for row in conn.execute(differing):
        got, want = row[: len(cols)], row[len(cols) :]
        if all(_same(g, w) for g, w in zip(got, want)):
            near += 1
        else:
            example = example or f"{name} row {want[k]!r}: got {_short(got)}, expected {_short(want)}"
    expected_count = conn.execute(f"SELECT count(*) FROM exp.e{i}").fetchone()[0]
    if found < expected_count and not example:
        missing = conn.execute(
            f"SELECT e.c{k} FROM exp.e{i} AS e WHERE NOT EXISTS (SELECT 1 FROM {quote(name)} AS a WHERE {on}) LIMIT 1"
        ).fetchone()
        example = f"{name} row {missing[0]!r} is missing" if missing else ""
    return _Found(found, max(0, a_count - found)), min(found, exact + near), example


def row_stats(path: Path, expected_path: Path, target: Schema, expected: Mapping[str, list[tuple]]) -> RowStats:
    """Compare every expected table and view with the database, keyed by primary key (views: key
    column). Exact matches are counted in SQL; the few mismatches are re-compared in Python with a
    float tolerance."""
    total = sum(len(rows) for rows in expected.values())
    matched = wrong = lost = extra = 0
    example = ""
    conn = open_readonly(path, attach={"exp": expected_path})
    try:
        objects = {r[0].lower() for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        for i, (name, rows) in enumerate(expected.items()):
            if name.lower() not in objects:
                lost += len(rows)
                example = example or f"{name} is missing"
                continue
            try:
                found, ok, first = _compare(conn, i, name, target)
            except sqlite3.Error as error:
                lost += len(rows)
                example = example or f"reading {name} failed: {error}"
                continue
            matched += ok
            wrong += found.matched_keys - ok
            lost += len(rows) - found.matched_keys
            extra += found.extra
            example = example or first
    except sqlite3.Error as error:
        lost = total - matched - wrong
        example = f"reading rows failed: {error}"
    finally:
        conn.close()
    return RowStats(total, matched, wrong, lost, extra, example)


def noop_row_stats(source: Schema, rows: Mapping[str, list[tuple]], target: Schema, expected: Mapping[str, list[tuple]]) -> RowStats:
    """What `row_stats` would report for a migration that changes nothing (computed in Python):
    each expected table or view read from the same-named source table, if any."""
    total = sum(len(want) for want in expected.values())
    matched = wrong = lost = extra = 0
    for name, want in expected.items():
        cols, k, _ = _shape(target, name)
        if not source.has_table(name) or cols[k] not in source.table(name).column_names:
            lost += len(want)
            continue
        have = source.table(name).column_names
        picks = [have.index(c) if c in have else None for c in cols]
        actual = {row[picks[k]]: tuple(None if i is None else row[i] for i in picks) for row in rows.get(name, [])}
        for row in want:
            got = actual.pop(row[k], None)
            if got is None:
                lost += 1
            elif got == row or all(_same(g, w) for g, w in zip(got, row)):
                matched += 1
            else:
                wrong += 1
        extra += len(actual)
    return RowStats(total, matched, wrong, lost, extra)


def _short(row: tuple) -> str:
    text_ = repr(row)
    return text_ if len(text_) <= 160 else text_[:157] + "..."
