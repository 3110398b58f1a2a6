"""Make a column NOT NULL, backfilling missing values from another column or a constant."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, literal, rebuild, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table, replace_column

__all__ = ["FAMILY", "Backfill"]


class Backfill(Family):
    name = "not_null_backfill"
    title = "add NOT NULL with a backfill rule"

    def draw(self, rng: random.Random) -> Params:
        return {
            "table": pick(rng, ("orders", "shipments", "tickets", "bookings")),
            "column": pick(rng, ("shipped_at", "closed_at", "confirmed_at", "due_on")),
            "mode": pick(rng, ("column", "constant")),
            "constant": pick(rng, ("1970-01-01", "unknown", "0000-00-00")),
            "indexed": rng.random() < 0.5,
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t, col = p["table"], p["column"]
        source = Table(
            t,
            (
                Column("id", "INTEGER", primary_key=True),
                Column("customer", "TEXT", notnull=True),
                Column("created_at", "TEXT", notnull=True),
                Column(col, "TEXT"),
                Column("amount", "INTEGER"),
            ),
        )
        target = replace_column(source, col, Column(col, "TEXT", notnull=True))
        indexes: tuple[Index, ...] = (Index(f"idx_{t}_created_at", t, ("created_at",)),)
        if p["indexed"]:
            indexes += (Index(f"idx_{t}_{col}", t, (col,)),)
        return Schema((source,), indexes), Schema((target,), indexes)

    def _fallback(self, p: Params) -> str:
        return "the value of `created_at` (unchanged)" if p["mode"] == "column" else f"the text {literal(p['constant'])}"

    def rules(self, p: Params) -> str:
        col = p["column"]
        return (
            f"Make `{p['table']}`.`{col}` NOT NULL (same type; keep every index). If `{col}` is "
            f"NULL, or is '' or only spaces (U+0020), it becomes {self._fallback(p)}. Otherwise it becomes the value "
            "with leading and trailing spaces (U+0020 only) removed. Keep every row; other columns are unchanged."
        )

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1):
            created = values.timestamp(rng)
            if rng.random() < (0.45 if hard else 0.3):
                value = pick(rng, (None, None, "", "   "))
            else:
                value = values.pad(rng, values.date(rng) if rng.random() < 0.7 else values.timestamp(rng), 0.3 if hard else 0.1)
            first, last = values.person(rng)
            amount = pick(rng, (0, -1, 2**31 - 1, randrange(rng, 1, 10_000), None))
            out.append((i, f"{first} {last}", created, value, amount))
        return {p["table"]: out}

    def fill(self, p: Params, created: str, value: str | None) -> str:
        v = sql_trim(value)
        if v:
            return v
        return created if p["mode"] == "column" else p["constant"]

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        return {p["table"]: [(i, c, at, self.fill(p, at, v), a) for i, c, at, v, a in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        col = p["column"]
        fallback = "created_at" if p["mode"] == "column" else literal(p["constant"])
        expr = f"CASE WHEN trim(coalesce({col}, '')) = '' THEN {fallback} ELSE trim({col}) END"
        _, target = self.schemas(p)
        return rebuild(target.tables[0], {col: expr}, p["table"], target.indexes)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        vals = [None, "   ", " 2024-03-01 ", "2024-03-02 10:00:00"]
        return {p["table"]: [(k + 1, "Ann Lee", "2024-02-28 09:00:00", v, 10) for k, v in enumerate(vals)]}


FAMILY = Backfill()
