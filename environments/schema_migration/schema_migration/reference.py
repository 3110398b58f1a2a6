"""Writes the reference rows (the correctly migrated held-out rows) into a file for the confined child to compare with.

The tables get names drawn afresh for each grading, so no view or trigger the agent wrote can name
them; this is the one place the grader itself writes rows to disk.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schema_migration.jail import RowPlan
from schema_migration.schema import Row, Schema

__all__ = ["write_expected"]


def _shape(target: Schema, name: str) -> tuple[tuple[str, ...], int, str, list[bool]]:
    """(columns, key position, key affinity, REAL flags) of a target table or view."""
    if target.has_table(name):
        table = target.table(name)
        key = table.primary_key[0]
        return (
            table.column_names,
            table.column_names.index(key),
            table.column(key).type,
            [c.type == "REAL" for c in table.columns],
        )
    view = next(v for v in target.views if v.name == name)
    key = view.key or view.columns[0]
    return view.columns, view.columns.index(key), "INTEGER", [False] * len(view.columns)


def write_expected(path: Path, target: Schema, expected: Mapping[str, list[Row]]) -> RowPlan:
    """Store the reference rows for the child to join, under names drawn afresh for each grading
    (so no view or trigger the agent wrote can name them), and say what to compare.

    Only the key column has a type (so the join can use its index); the others have none, so the
    stored values keep their Python types (int, float, str, None)."""
    tag = secrets.token_hex(8)
    objects: list[dict[str, Any]] = []
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        written: dict[int, tuple[str, int]] = {}
        for i, (name, rows) in enumerate(expected.items()):
            cols, k, key_type, real = _shape(target, name)
            table = f"e{tag}_{i}"
            objects.append(
                {"name": name, "table": table, "columns": list(cols), "key": k, "real": real, "rows": len(rows)}
            )
            same = written.get(id(rows))
            if same is not None and same[1] == k:  # e.g. a view showing a table's rows: store once
                conn.execute(f"CREATE VIEW {table} AS SELECT * FROM {same[0]}")
                continue
            written[id(rows)] = (table, k)
            defs = ", ".join(f"c{j} {key_type}" if j == k else f"c{j}" for j in range(len(cols)))
            conn.execute(f"CREATE TABLE {table} ({defs})")
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", rows)
            conn.execute(f"CREATE INDEX {table}_key ON {table}(c{k})")
        conn.commit()
    finally:
        conn.close()
    return RowPlan(path.name, f"x{tag}", objects)
