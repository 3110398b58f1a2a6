"""What a migration family provides, and the SQL/Python helpers families share.

A family is pure: from seeded parameters it gives the source and target schema of the tables it
touches, the rules in prose, row generators, the reference transformation of rows (Python) and
the reference migration (SQL). The reference Python and SQL must agree on every row the generators
can produce; the family tests check that on held-out rows.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from schema_migration.schema import Index, Row, Rows, Schema, Table

__all__ = ["Family", "Params", "Probe", "ascii_lower", "ids", "literal", "rebuild", "sql_trim"]

Params = dict[str, Any]


@dataclass(frozen=True)
class Probe:
    """A grader-written statement run after the migration and then undone, to test a CHECK."""

    sql: str
    should_fail: bool
    what: str


class Family(ABC):
    name: ClassVar[str]
    title: ClassVar[str]

    @abstractmethod
    def draw(self, rng: random.Random) -> Params:
        """The task's knobs (JSON-able): table and column names, variant rules."""

    @abstractmethod
    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        """(source, target) for the tables this family touches."""

    @abstractmethod
    def rules(self, p: Params) -> str:
        """The transformation rules, precise enough to implement from the text alone."""

    @abstractmethod
    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        """Source rows for the touched tables; `hard` raises the share of awkward values."""

    @abstractmethod
    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        """The reference: target rows (tables and views) for the touched source rows."""

    @abstractmethod
    def migration(self, p: Params) -> str:
        """The reference migration SQL."""

    @abstractmethod
    def examples(self, p: Params) -> dict[str, list[Row]]:
        """A few hand-picked source rows whose transformation the prompt shows."""

    def probes(self, p: Params) -> tuple[Probe, ...]:
        return ()


def ids(rng: random.Random, n: int, base: int) -> list[int]:
    """`n` distinct increasing ids from `base` on, with gaps."""
    return sorted(rng.sample(range(base, base + 3 * n + 10), n))


def sql_trim(value: str | None) -> str:
    """SQLite's one-argument trim(): removes spaces (U+0020) only; NULL becomes ''."""
    return (value or "").strip(" ")


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(value: str) -> str:
    """SQLite's lower() without ICU: only A-Z change."""
    return value.translate(_ASCII_LOWER)


def literal(value: object) -> str:
    """A SQL literal for a Python value."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def rebuild(
    target: Table,
    exprs: dict[str, str],
    source_from: str,
    indexes: tuple[Index, ...] = (),
    where: str = "",
) -> str:
    """SQL that rebuilds `target.name` as `target` (create new, copy with `exprs`, drop, rename),
    then recreates its indexes (dropping a table drops them)."""
    new = Table(target.name + "__new", target.columns)
    names = ", ".join(target.column_names)
    selects = ", ".join(exprs.get(c, c) for c in target.column_names)
    lines = [
        new.ddl(),
        f"INSERT INTO {new.name} ({names})\n  SELECT {selects}\n  FROM {source_from}"
        + (f"\n  WHERE {where}" if where else "")
        + ";",
        f"DROP TABLE {target.name};",
        f"ALTER TABLE {new.name} RENAME TO {target.name};",
    ]
    lines += [i.ddl() for i in indexes]
    return "\n".join(lines)
