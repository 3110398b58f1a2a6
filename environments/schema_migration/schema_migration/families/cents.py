"""Change a money column from messy text ("$1,234.50", "1.234,50 €") to integer cents."""

from __future__ import annotations

import random
from decimal import Decimal

from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, literal, rebuild
from schema_migration.schema import Column, Row, Rows, Schema, Table, replace_column

__all__ = ["FAMILY", "Cents"]

NUMERIC_CHARS = frozenset("0123456789.-")


class Cents(Family):
    name = "change_type_cents"
    title = "change a type with cleaning"

    def draw(self, rng: random.Random) -> Params:
        column = pick(rng, ("price", "amount", "total"))
        fmt = pick(rng, ("us", "eu"))
        return {
            "table": pick(rng, ("products", "invoices", "payments", "line_items")),
            "column": column,
            "target": f"{column}_cents",
            "format": fmt,
            "symbol": pick(rng, ("$", "£")) if fmt == "us" else "€",
            "empty": pick(rng, ("zero", "null")),
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        source = Table(
            p["table"],
            (
                Column("id", "INTEGER", primary_key=True),
                Column("sku", "TEXT", notnull=True, unique=True),
                Column(p["column"], "TEXT"),
                Column("qty", "INTEGER"),
            ),
        )
        target = replace_column(source, p["column"], Column(p["target"], "INTEGER", notnull=p["empty"] == "zero"))
        return Schema((source,)), Schema((target,))

    def _marks(self, p: Params) -> tuple[str, str]:
        """(thousands separator, decimal mark) of the source text."""
        return (",", ".") if p["format"] == "us" else (".", ",")

    def rules(self, p: Params) -> str:
        thousands, mark = self._marks(p)
        empty = "0" if p["empty"] == "zero" else "NULL"
        null = " NOT NULL" if p["empty"] == "zero" else " (nullable)"
        swap = "" if mark == "." else ", then replace the decimal comma ',' by '.'"
        return (
            f"Replace the TEXT column `{p['column']}` of `{p['table']}` by `{p['target']}` INTEGER{null}: the amount "
            f"in cents. Clean each value: remove every space (U+0020), every {literal(p['symbol'])} and every "
            f"{literal(thousands)} (thousands separator){swap}. If the cleaned text is a number (an optional '-', "
            "digits, and optionally '.' followed by one or two digits; '.05' also occurs), the result "
            f"is that number times 100 as an exact integer (e.g. 1234.5 -> 123450). If the value is NULL, the "
            f"cleaned text is empty, or it contains any character other than digits, '-' and '.' (such as "
            f"'n/a'), the result is {empty}. Keep every row; other columns are unchanged."
        )

    def _text(self, p: Params, rng: random.Random, hard: bool) -> str | None:
        if rng.random() < (0.2 if hard else 0.1):
            return pick(rng, (None, "", "   ", "n/a", "TBD", "free"))
        cents = pick(rng, 
            (0, 1, 5, 10, 99, 100, 9_999_999_999, -randrange(rng, 1, 10_000))
            if rng.random() < (0.25 if hard else 0.1)
            else (randrange(rng, 100, 2_000_000),)
        )
        return self.format(p, rng, cents)

    def format(self, p: Params, rng: random.Random, cents: int) -> str:
        thousands, mark = self._marks(p)
        sign = "-" if cents < 0 else ""
        whole, frac = divmod(abs(cents), 100)
        grouped = f"{whole:,}".replace(",", thousands) if rng.random() < 0.5 else str(whole)
        style = randrange(rng, 4)
        if style == 0 and frac == 0:
            number = grouped
        elif style == 1 and frac % 10 == 0:
            number = f"{grouped}{mark}{frac // 10}"
        elif style == 2 and whole == 0 and frac:
            number = f"{mark}{frac:02d}"
        else:
            number = f"{grouped}{mark}{frac:02d}"
        symbol = p["symbol"]
        text = pick(rng, (f"{sign}{symbol}{number}", f"{sign}{number}", f"{symbol} {sign}{number}", f"{sign}{number} {symbol}"))
        return " " * randrange(rng, 3) + text + " " * randrange(rng, 3)

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1):
            qty = pick(rng, (None, 0, 1, randrange(rng, 1, 500)))
            out.append((i, f"SKU-{i:07d}", self._text(p, rng, hard), qty))
        return {p["table"]: out}

    def cents(self, p: Params, text: str | None) -> int | None:
        empty = 0 if p["empty"] == "zero" else None
        if text is None:
            return empty
        thousands, mark = self._marks(p)
        clean = text.replace(" ", "").replace(p["symbol"], "").replace(thousands, "")
        if mark == ",":
            clean = clean.replace(",", ".")
        if not clean or not set(clean) <= NUMERIC_CHARS:
            return empty
        return int(Decimal(clean) * 100)

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        return {p["table"]: [(i, sku, self.cents(p, text), qty) for i, sku, text, qty in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        thousands, mark = self._marks(p)
        clean = f"replace(replace(replace({p['column']}, ' ', ''), {literal(p['symbol'])}, ''), {literal(thousands)}, '')"
        if mark == ",":
            clean = f"replace({clean}, ',', '.')"
        empty = "0" if p["empty"] == "zero" else "NULL"
        value = (
            f"CASE WHEN clean IS NULL OR clean = '' OR clean GLOB '*[^0-9.-]*' THEN {empty} "
            "ELSE CAST(round(CAST(clean AS REAL) * 100) AS INTEGER) END"
        )
        _, target = self.schemas(p)
        return rebuild(
            target.tables[0], {p["target"]: value}, f"(SELECT *, {clean} AS clean FROM {p['table']}) AS src"
        )

    def examples(self, p: Params) -> dict[str, list[Row]]:
        s = p["symbol"]
        texts = (
            [f" {s}1,234.50", "7", f"-{s}0.05", "12.5", "n/a", None]
            if p["format"] == "us"
            else ["1.234,50 €", "7", "-€0,05", "12,5", "n/a", None]
        )
        return {p["table"]: [(k + 1, f"SKU-{k + 1:07d}", t, 1) for k, t in enumerate(texts)]}


FAMILY = Cents()
