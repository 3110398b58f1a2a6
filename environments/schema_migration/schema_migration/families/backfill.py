"""Make a column NOT NULL, backfilling missing values from another column or a constant."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass, space_classes
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
        return (
            "the value of `created_at` (unchanged)" if p["mode"] == "column" else f"the text {literal(p['constant'])}"
        )

    def rules(self, p: Params) -> str:
        col = p["column"]
        return (
            f"Make `{p['table']}`.`{col}` NOT NULL (same type; keep every index). If `{col}` is "
            f"NULL, or is '' or only spaces (U+0020), it becomes {self._fallback(p)}. Otherwise it becomes the value "
            "with leading and trailing spaces (U+0020 only) removed, and nothing else changes: it need not be a "
            "date (text such as 'soon' or '2024-02-30' is kept), letter case, times and inner spaces are kept, "
            "and tabs, newlines or non-breaking spaces are not spaces (a value of only those is not blank). Keep "
            "every row; other columns are unchanged."
        )

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
            created = values.timestamp(rng)
            if rng.random() < (0.45 if hard else 0.3):
                value = pick(rng, (None, None, "", "   "))
            else:
                value = values.pad(
                    rng, values.date(rng) if rng.random() < 0.7 else values.timestamp(rng), 0.3 if hard else 0.1
                )
            first, last = values.person(rng)
            amount = pick(rng, (0, -1, 2**31 - 1, randrange(rng, 1, 10_000), None))
            out.append((i, f"{first} {last}", created, value, amount))
        return {p["table"]: out}

    def context(self, p: Params, rows: Rows) -> Any:
        return Counter(r[3] for r in rows[p["table"]] if r[3] is not None)

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("customer", "created_at", "amount")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t = p["table"]

        def row(rng: random.Random, fresh: Fresh, value: str | None, created: str = "", amount: Any = 1) -> Row:
            first, last = values.person(rng)
            return (fresh(t), f"{first} {last}", created or values.timestamp(rng), value, amount)

        def cls(name: str, value: Any, member: Any, created: Any = None, amount: Any = 1) -> ValueClass:
            def make(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
                return {t: [row(rng, fresh, value(rng, k), created(rng, k) if created else "", amount)]}

            return ValueClass(name, t, make, lambda r, c: member(r, c))

        def blank(v: object) -> bool:
            return v is None or (isinstance(v, str) and v.strip(" ") == "")

        missing: tuple[ValueClass, ...] = (
            cls("NULL", lambda rng, k: None, lambda r, c: r[3] is None),
            cls("'' (empty)", lambda rng, k: "", lambda r, c: r[3] == ""),
            cls("only U+0020", lambda rng, k: " " * (1 + k % 3), lambda r, c: r[3] not in (None, "") and blank(r[3])),
        )
        if p["mode"] == "column":
            missing += (
                cls("created_at copied exactly as it is: padded, not a date, other case",
                    lambda rng, k: (None, "", "  ")[k % 3], lambda r, c: blank(r[3]) and (r[2] != r[2].strip(" ") or not r[2][:1].isdigit()),
                    created=lambda rng, k: (" " + values.timestamp(rng) + " ", "soon", "TBD ", "2024-02-30", "Unknown", values.date(rng) + "\t")[k]),
            )  # fmt: skip

        def date_like(rng: random.Random) -> str:
            return values.date(rng) if rng.random() < 0.5 else values.timestamp(rng)

        trim = space_classes(
            t, p["column"], lambda r: (r[3],), lambda rng, k, fresh, text: {t: [row(rng, fresh, text)]}, date_like
        )
        kept = (
            cls("not a date: words, impossible dates, other formats (kept)", lambda rng, k: ("soon", "2024-02-30", "2023-13-01", "01/02/2024", "Pending", "n/a")[k],
                lambda r, c: isinstance(r[3], str) and not blank(r[3]) and not (r[3].strip(" ")[:4].isdigit() and r[3].strip(" ")[4:5] == "-" and r[3].strip(" ")[5:7] <= "12" and r[3].strip(" ")[8:10] <= "28")),
            cls("a timestamp: kept whole, not cut to a date", lambda rng, k: values.timestamp(rng) if k % 2 else values.timestamp(rng)[:16], lambda r, c: isinstance(r[3], str) and len(r[3].strip(" ")) > 10),
            cls("a value shared by several rows (the index is not unique)", lambda rng, k: "2020-02-29", lambda r, c: r[3] is not None and c[r[3]] > 1 and not blank(r[3])),
            cls("amount NULL, 0 or negative (kept)", lambda rng, k: values.date(rng), lambda r, c: r[4] is None or isinstance(r[4], int) and r[4] <= 0, amount=None),
        )  # fmt: skip
        return (
            Rule(f"NULL, '' or only U+0020: {self._fallback(p)}", missing),
            Rule("otherwise: U+0020 (only) removed at both ends", trim),
            Rule("nothing else changes (not a date, case, times, other columns)", kept),
        )

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
