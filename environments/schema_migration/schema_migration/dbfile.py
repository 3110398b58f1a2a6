"""Builds a SQLite database from a schema and rows: as a plan (for the grader's confined child) or as bytes (for the container)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from schema_migration.schema import Row, Schema

__all__ = ["BuildPlan", "plan", "to_bytes"]


@dataclass(frozen=True)
class BuildPlan:
    """What to run, in order, to create the database: tables, then rows, then indexes, views and
    triggers (last, so loading rows fires none of them). Plain data, so the grader's confined child
    can build the database itself."""

    create: list[str]
    inserts: list[tuple[str, list[Row]]]
    post: list[str]


def plan(schema: Schema, rows: Mapping[str, list[Row]]) -> BuildPlan:
    return BuildPlan(
        create=[t.ddl() for t in schema.tables],
        inserts=[
            (f"INSERT INTO {t.name} VALUES ({', '.join('?' * len(t.columns))})", rows.get(t.name, []))
            for t in schema.tables
        ],
        post=[i.ddl() for i in schema.indexes] + [v.ddl() for v in schema.views] + [t.sql for t in schema.triggers],
    )


def _run_plan(conn: sqlite3.Connection, build: BuildPlan) -> None:
    """Execute `build` on an empty database (the connection must be in autocommit mode or fresh)."""
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN")
    for statement in build.create:
        conn.execute(statement)
    for insert, rows in build.inserts:
        conn.executemany(insert, rows)
    for statement in build.post:
        conn.execute(statement)
    conn.execute("COMMIT")


def to_bytes(schema: Schema, rows: Mapping[str, list[Row]]) -> bytes:
    """The database file's bytes."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _run_plan(conn, plan(schema, rows))
        return conn.serialize()
    finally:
        conn.close()
