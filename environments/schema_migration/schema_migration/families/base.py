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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from schema_migration.schema import Index, Row, Rows, Schema, Table

if TYPE_CHECKING:
    from schema_migration.cases import Rule

__all__ = ["Family", "Params", "World", "ascii_lower", "ids", "literal", "rebuild", "sql_trim"]

Params = dict[str, Any]
WORLD_ROWS = 200
"""Rows in the main table of a family's extra held-out databases (`Family.worlds`)."""


@dataclass(frozen=True)
class World:
    """A whole-database class: an extra held-out database the migration must also get right (e.g.
    one with no orphans at all, where a rule still applies)."""

    name: str
    rows: Callable[[Params, random.Random, int], dict[str, list[Row]]]


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
    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        """Source rows for the touched tables, `n` in the main one, no id in `taken`; `hard` raises
        the share of awkward values."""

    @abstractmethod
    def cases(self, p: Params) -> tuple[Rule, ...]:
        """Each rule of `rules(p)` and the value classes it names or excludes (see `cases`)."""

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        """Source columns the rules leave unchanged, per table (each gets a class of odd values)."""
        return {}

    def rules_table(self, p: Params) -> tuple[Rule, ...]:
        """`cases(p)` and, for the columns the rules leave alone, one rule: every value kept exactly."""
        from schema_migration.cases import Rule as RuleRow, kept_classes

        kept = kept_classes(self, p)
        return self.cases(p) + (
            (RuleRow("every column the rules do not name keeps every value exactly", kept),) if kept else ()
        )

    def main_table(self, p: Params) -> str:
        """The source table `n` counts the rows of."""
        return self.schemas(p)[0].tables[0].name

    def context(self, p: Params, rows: Rows) -> Any:
        """What class membership needs to know about the whole database (e.g. the parents' ids)."""
        return None

    def derived(self, p: Params) -> dict[str, str]:
        """Target table or view -> the source table its rows come from, key for key (for the per-class checks)."""
        source, target = self.schemas(p)
        names = {t.name for t in source.tables}
        return {
            name: name for name in [*(t.name for t in target.tables), *(v.name for v in target.views)] if name in names
        }

    def worlds(self, p: Params) -> tuple[World, ...]:
        """Extra held-out databases, each a whole-database class (none by default)."""
        return ()

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        """The visible sample (`hard` False), or the held-out rows: every class of `cases`, then hard rows."""
        if not hard:
            return self.sample(p, rng, n, False)
        from schema_migration.cases import heldout

        return heldout(self, p, rng, n)

    @abstractmethod
    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        """The reference: target rows (tables and views) for the touched source rows."""

    @abstractmethod
    def migration(self, p: Params) -> str:
        """The reference migration SQL."""

    @abstractmethod
    def examples(self, p: Params) -> dict[str, list[Row]]:
        """A few hand-picked source rows whose transformation the prompt shows."""

    def write_values(self, p: Params) -> dict[str, tuple[object, ...]]:
        """Values the later-write battery tries in a column ("table.column"), beyond the generic
        ones: each bound a CHECK compares against and its neighbours."""
        return {}


def ids(rng: random.Random, n: int, base: int, taken: frozenset[int] = frozenset()) -> list[int]:
    """`n` distinct increasing ids from `base` on, with gaps, none in `taken`."""
    if not taken:
        return sorted(rng.sample(range(base, base + 3 * n + 10), n))
    pool = range(base, base + 3 * n + 10 + len(taken))
    return sorted([i for i in rng.sample(pool, n + len(taken)) if i not in taken][:n])


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
