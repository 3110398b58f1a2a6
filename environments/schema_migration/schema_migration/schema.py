"""Typed description of a SQLite schema (tables, indexes, views, triggers) that renders its own DDL.

Generators build source and target schemas from these; the grader checks a migrated database
against the target one. Everything is frozen and JSON-round-trippable (`to_json`/`from_json`) so
the prompt can show the spec in a machine-readable block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

# SQLite's type-affinity rules: one implementation, shared with the grader's confined child.
from schema_migration.jail_reads import Affinity, affinity

Row = tuple[Any, ...]
"""One row: its SQLite values (int, float, str, bytes or None) in the table's (or view's) column
order. The values are `Any`: each family builds and reads back its own tables' rows, whose
columns it knows one by one."""
Rows = Mapping[str, list[Row]]
"""Rows per table name."""


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    name: str
    type: Affinity
    notnull: bool = False
    primary_key: bool = False
    unique: bool = False
    references: tuple[str, str] | None = None
    """(table, column) this column is a foreign key to."""
    check: str | None = None
    """A column CHECK expression, e.g. `qty >= 0`."""

    def ddl(self) -> str:
        parts = [self.name, self.type]
        if self.primary_key:
            parts.append("PRIMARY KEY")
        if self.notnull:
            parts.append("NOT NULL")
        if self.unique:
            parts.append("UNIQUE")
        if self.check:
            parts.append(f"CHECK ({self.check})")
        if self.references:
            parts.append(f"REFERENCES {self.references[0]}({self.references[1]})")
        return " ".join(parts)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def ddl(self) -> str:
        body = ",\n".join("  " + c.ddl() for c in self.columns)
        return f"CREATE TABLE {self.name} (\n{body}\n);"


@dataclass(frozen=True)
class Index:
    name: str
    table: str
    columns: tuple[str, ...]
    unique: bool = False

    def ddl(self) -> str:
        kind = "UNIQUE INDEX" if self.unique else "INDEX"
        return f"CREATE {kind} {self.name} ON {self.table}({', '.join(self.columns)});"


@dataclass(frozen=True)
class View:
    name: str
    columns: tuple[str, ...]
    select: str
    """The SELECT the view is defined by."""
    key: str = ""
    """Column the grader keys rows on (default: the first column)."""

    def ddl(self) -> str:
        return f"CREATE VIEW {self.name} AS\n  {self.select};"


@dataclass(frozen=True)
class Trigger:
    name: str
    table: str
    sql: str
    """The full CREATE TRIGGER statement, without the final semicolon."""

    def ddl(self) -> str:
        return self.sql + ";"


@dataclass(frozen=True)
class Schema:
    tables: tuple[Table, ...]
    indexes: tuple[Index, ...] = ()
    views: tuple[View, ...] = ()
    triggers: tuple[Trigger, ...] = ()

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)

    def has_table(self, name: str) -> bool:
        return any(t.name == name for t in self.tables)

    def indexes_of(self, table: str) -> tuple[Index, ...]:
        return tuple(i for i in self.indexes if i.table == table)

    def merged(self, other: Schema) -> Schema:
        """This schema's objects followed by `other`'s."""
        return Schema(
            self.tables + other.tables,
            self.indexes + other.indexes,
            self.views + other.views,
            self.triggers + other.triggers,
        )

    def ddl(self) -> str:
        statements = [t.ddl() for t in self.tables] + [i.ddl() for i in self.indexes]
        statements += [v.ddl() for v in self.views] + [t.ddl() for t in self.triggers]
        return "\n".join(statements)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Schema:
        def column(c: Mapping[str, Any]) -> Column:
            refs = c.get("references")
            return Column(**{**c, "references": tuple(refs) if refs else None})

        return Schema(
            tables=tuple(Table(t["name"], tuple(column(c) for c in t["columns"])) for t in data["tables"]),
            indexes=tuple(Index(i["name"], i["table"], tuple(i["columns"]), i["unique"]) for i in data["indexes"]),
            views=tuple(View(v["name"], tuple(v["columns"]), v["select"], v.get("key", "")) for v in data["views"]),
            triggers=tuple(Trigger(**t) for t in data["triggers"]),
        )


def replace_column(table: Table, name: str, *new: Column) -> Table:
    """`table` with column `name` replaced by the columns `new` (none: dropped), in place."""
    columns: list[Column] = []
    for c in table.columns:
        columns.extend(new if c.name == name else (c,))
    return replace(table, columns=tuple(columns))


__all__ = [
    "Affinity",
    "Column",
    "Index",
    "Row",
    "Rows",
    "Schema",
    "Table",
    "Trigger",
    "View",
    "affinity",
    "quote",
    "replace_column",
]
