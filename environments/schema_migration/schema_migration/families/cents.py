"""Change a money column from messy text ("$1,234.50", "1.234,50 €") to integer cents."""

from __future__ import annotations

import random
import re
from typing import Any

from schema_migration.cases import Fresh, Rule, ValueClass
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, literal, rebuild
from schema_migration.schema import Column, Row, Rows, Schema, Table, replace_column

__all__ = ["EXACT_CENTS", "FAMILY", "INTEGER_MAX", "Cents"]

NUMBER = re.compile(r"(-?)(?:([0-9]+)(?:\.([0-9]{1,2}))?|\.([0-9]{1,2}))")
"""A cleaned text that is a number: an optional '-', then digits with an optional '.' and one or two
digits, or '.' and one or two digits (ASCII digits only)."""
INTEGER_MAX = 2**63 - 1
"""The prompt bounds every amount's cents by this (SQLite's largest INTEGER), in magnitude."""
EXACT_CENTS = (
    "CAST(substr(clean, 1, length(clean) - length(u)) || substr(u, 1, instr(u || '.', '.') - 1)"
    " || substr(substr(u, instr(u || '.', '.') + 1) || '00', 1, 2) AS INTEGER)"
)
"""The cents of a number, exactly: its sign, whole digits and two decimal digits joined as text, cast
once (`clean` the cleaned text, `u` it without its '-'). Through REAL (53 bits) amounts of 16 or more
digits of cents would come out wrong."""


BIG = (
    "90071992547409M93", "-S123T456T789T012T345M67", "1000000000000000M01",
    "92233720368547758M07", "-92T233T720T368T547T758M07", "S 9876543210987654M3",
)  # fmt: skip
"""Amounts of 16 to 19 digits of cents (S symbol, T thousands separator, M decimal mark): 2**53 + 1,
both signs of the largest INTEGER, one decimal; none survives a trip through REAL."""


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
            f"in cents. Clean each value: remove every space (U+0020 only; tabs, non-breaking spaces and other "
            f"characters stay), every {literal(p['symbol'])} and every {literal(thousands)} (thousands separator, "
            f"wherever it stands){swap}. The cleaned text is a number if it is an optional '-' followed either by "
            "one or more ASCII digits, optionally followed by '.' and one or two digits, or by '.' and one or two "
            "digits (e.g. '7', '-12.5', '0.99', '.05', '-.5'). A number becomes that number times 100 as an exact "
            "integer, whatever its size (e.g. 1234.5 -> 123450, '-0' -> 0, 92233720368547758.07 -> "
            f"9223372036854775807); no amount in the data is larger in magnitude than that one, so every result "
            f"fits the INTEGER column. Anything else is {empty}: a NULL, an empty cleaned "
            "text, and any text that is not such a number, e.g. 'n/a', '12abc', '12.345' (three decimals), '12.' "
            f"(no digit after the mark), '+5', '5-', '--5', '1-2', '1e3', or digits other than 0-9. Keep every "
            "row; `sku` (UNIQUE) and `qty` are unchanged."
        )

    def _text(self, p: Params, rng: random.Random, hard: bool) -> str | None:
        if rng.random() < (0.2 if hard else 0.1):
            return pick(rng, (None, "", "   ", "n/a", "TBD", "free"))
        cents = pick(
            rng,
            (0, 1, 5, 10, 99, 100, 9_999_999_999, -randrange(rng, 1, 10_000))
            if rng.random() < (0.25 if hard else 0.1)
            else (randrange(rng, 100, 2_000_000),),
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
        text = pick(
            rng, (f"{sign}{symbol}{number}", f"{sign}{number}", f"{symbol} {sign}{number}", f"{sign}{number} {symbol}")
        )
        return " " * randrange(rng, 3) + text + " " * randrange(rng, 3)

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
            qty = pick(rng, (None, 0, 1, randrange(rng, 1, 500)))
            out.append((i, f"SKU-{i:07d}", self._text(p, rng, hard), qty))
        return {p["table"]: out}

    def clean(self, p: Params, text: str) -> str:
        thousands, mark = self._marks(p)
        clean = text.replace(" ", "").replace(p["symbol"], "").replace(thousands, "")
        return clean.replace(",", ".") if mark == "," else clean

    def cents(self, p: Params, text: str | None) -> int | None:
        empty = 0 if p["empty"] == "zero" else None
        match = None if text is None else NUMBER.fullmatch(self.clean(p, text))
        if match is None:
            return empty
        sign, whole, frac, only_frac = match.groups()
        digits = (frac or only_frac or "").ljust(2, "0")
        value = int(whole or "0") * 100 + int(digits)
        return -value if sign else value

    def _texts(self, p: Params, forms: tuple[str, ...]) -> tuple[str, ...]:
        """Forms written with S (symbol), T (thousands separator) and M (decimal mark), in this task's notation."""
        thousands, mark = self._marks(p)
        return tuple(f.replace("S", p["symbol"]).replace("T", thousands).replace("M", mark) for f in forms)

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("sku", "qty")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t = p["table"]

        def row(rng: random.Random, fresh: Fresh, text: str | None, qty: Any = "") -> Row:
            i = fresh(t)
            return (i, f"SKU-{i:07d}", text, pick(rng, (0, 1, randrange(rng, 1, 500))) if qty == "" else qty)

        def cls(name: str, forms: tuple[str | None, ...], member: Any) -> ValueClass:
            texts = tuple(None if f is None else self._texts(p, (f,))[0] for f in forms)
            return ValueClass(
                name, t, lambda rng, k, fresh: {t: [row(rng, fresh, texts[k % len(texts)])]}, lambda r, _c: member(r[2])
            )

        def clean(v: object) -> str | None:
            return self.clean(p, v) if isinstance(v, str) else None

        def number(v: object) -> re.Match[str] | None:
            c = clean(v)
            return None if c is None else NUMBER.fullmatch(c)

        def has(chars: str) -> Any:
            return lambda v: isinstance(v, str) and bool(set(v) & set(chars))

        sym = p["symbol"]
        cleaning = (
            cls("U+0020 around and inside the amount (removed)", (" S12M50 ", "1 234M5", "- 5", "S 7 ", "  12  "), lambda v: isinstance(v, str) and " " in v.strip(" ") and number(v) is not None),
            cls("a tab, newline or no-break space (not removed: not a number)", ("\t12M50", "12M50\u00a0", "S\n7", "1\u2003234"), has("\t\n\u00a0\u2003")),
            cls("the symbol before, after, twice, or after the sign", ("S12", "12S", "SS12M5", "-S7M25", "S-7M25"), lambda v: isinstance(v, str) and sym in v and number(v) is not None),
            cls("thousands separators anywhere (removed)", ("1T234T567M89", "12T34", "T123", "1T2T3"), lambda v: isinstance(v, str) and self._marks(p)[0] in v and number(v) is not None),
        )  # fmt: skip
        numbers = (
            cls("whole amounts", ("7", "1200", "S0"), lambda v: (m := number(v)) is not None and m.group(2) is not None and m.group(3) is None and m.group(4) is None),
            cls("one decimal, ending in each of 0, 1, 5, 9", ("12M5", "-3M1", "0M9", "7M0"), lambda v: (m := number(v)) is not None and len(m.group(3) or m.group(4) or "xx") == 1),
            cls("two decimals, with 1 and 99 cents", ("0M01", "0M99", "1M00", "12M34"), lambda v: (m := number(v)) is not None and len(m.group(3) or "") == 2),
            cls("no digit before the mark", ("M05", "M5", "-M05", "SM99"), lambda v: (m := number(v)) is not None and m.group(4) is not None),
            cls("negative amounts", ("-12M50", "-S5", "S-5", "-1T000"), lambda v: (m := number(v)) is not None and m.group(1) == "-" and self.cents(p, v) != 0),
            cls("zero and minus zero", ("0", "-0", "0M00", "-0M0"), lambda v: number(v) is not None and self.cents(p, v) == 0),
            cls("leading zeros", ("007M50", "00", "-0012"), lambda v: (m := number(v)) is not None and (m.group(2) or "").startswith("0") and len(m.group(2)) > 1),
            cls("large exact amounts (13 to 15 digits of cents)", ("99999999999M99", "-12T345T678T901M23", "9007199254740M99"), lambda v: number(v) is not None and 10**12 <= abs(self.cents(p, v) or 0) < 10**15),
            cls("16 to 19 digits of cents, up to the INTEGER limit (past REAL's 53 bits)", BIG, lambda v: number(v) is not None and abs(self.cents(p, v) or 0) >= 10**15),
        )  # fmt: skip
        empty = "0" if p["empty"] == "zero" else "NULL"
        others = (
            cls("three or more decimals (not a number)", ("12M345", "0M001", "-1M2345"), lambda v: (c := clean(v)) is not None and number(v) is None and bool(re.fullmatch(r"-?[0-9]*\.[0-9]{3,}", c))),
            cls("a mark with no digit after it, or alone", ("12M", "M", "-M", "S5M"), lambda v: (c := clean(v)) is not None and bool(re.fullmatch(r"-?[0-9]*\.", c))),
            cls("a sign that is not a single leading '-'", ("5-", "--5", "1-2", "-", "-S-5"), lambda v: (c := clean(v)) is not None and number(v) is None and "-" in c and bool(re.fullmatch(r"[-0-9.]+", c))),
            cls("a plus sign", ("+5", "+12M50", "S+1"), lambda v: isinstance(v, str) and "+" in v),
            cls("digit-led junk", ("12abc", "7 kg", "1e3", "12M50 EUR", "0x1F"), lambda v: (c := clean(v)) is not None and c[:1].isdigit() and number(v) is None and bool(re.search("[a-zA-Z]", c))),
            cls("two marks", ("1M2M3", "12M50M"), lambda v: (c := clean(v)) is not None and c.count(".") >= 2),
            cls("words", ("n/a", "TBD", "free", "-"), lambda v: isinstance(v, str) and bool(re.fullmatch(r"[ a-zA-Z/]+", v))),
            cls("digits other than 0-9", ("\u0661\u0662", "\uff11\uff12M50", "\u0967"), lambda v: isinstance(v, str) and any(ch.isdigit() and not ch.isascii() for ch in v)),
            cls("NULL", (None,), lambda v: v is None),
            cls("empty after cleaning: '', spaces, the symbol alone", ("", "   ", "S", " S ", "T"), lambda v: clean(v) == ""),
        )  # fmt: skip
        kept = (
            ValueClass(
                "qty NULL (kept)",
                t,
                lambda rng, k, fresh: {t: [row(rng, fresh, "1M00", None)]},
                lambda r, _c: r[3] is None,
            ),
        )
        return (
            Rule(
                f"clean: remove every U+0020, {sym!r} and thousands separator"
                + (", then ',' -> '.'" if p["format"] == "eu" else ""),
                cleaning,
            ),
            Rule(
                "a number ('-'? digits ('.' 1-2 digits)? | '-'? '.' 1-2 digits) -> exact cents, at any size up to the INTEGER limit",
                numbers,
            ),
            Rule(f"anything else -> {empty}", others),
            Rule("keep every row; sku and qty unchanged", kept),
        )

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        return {p["table"]: [(i, sku, self.cents(p, text), qty) for i, sku, text, qty in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        thousands, mark = self._marks(p)
        clean = (
            f"replace(replace(replace({p['column']}, ' ', ''), {literal(p['symbol'])}, ''), {literal(thousands)}, '')"
        )
        if mark == ",":
            clean = f"replace({clean}, ',', '.')"
        empty = "0" if p["empty"] == "zero" else "NULL"
        # u: the cleaned text without one leading '-'; a number is digits with at most one '.', which
        # has one or two digits after it, and at least one digit in all.
        number = (
            "u NOT GLOB '*[^0-9.]*' AND u NOT GLOB '*.*.*' AND u GLOB '*[0-9]*' "
            "AND (u NOT GLOB '*.*' OR u GLOB '*.[0-9]' OR u GLOB '*.[0-9][0-9]')"
        )
        value = f"CASE WHEN {number} THEN {EXACT_CENTS} ELSE {empty} END"
        unsigned = "CASE WHEN substr(clean, 1, 1) = '-' THEN substr(clean, 2) ELSE clean END"
        _, target = self.schemas(p)
        return rebuild(
            target.tables[0],
            {p["target"]: value},
            f"(SELECT *, {unsigned} AS u FROM (SELECT *, {clean} AS clean FROM {p['table']})) AS src",
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
