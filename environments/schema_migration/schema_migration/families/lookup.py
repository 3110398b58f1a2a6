"""Normalise a repeated text column into a lookup table referenced by a foreign key."""

from __future__ import annotations

import random
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass, space_classes
from schema_migration.values import pick
from schema_migration.families.base import Family, Params, ascii_lower, ids, rebuild, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table, replace_column

__all__ = ["FAMILY", "Lookup"]

DOMAINS = {
    "employees": ("department", "departments", ("Sales", "Engineering", "Support", "Légal", "R&D", "Finance", "Ops", "Marketing")),
    "tickets": ("status", "statuses", ("Open", "Closed", "Pending", "On Hold", "Résolu", "Escalated", "New", "Won't Fix")),
    "books": ("genre", "genres", ("Fantasy", "Sci-Fi", "Crime", "Poetry", "Biografía", "History", "Horror", "Romance")),
    "devices": ("vendor", "vendors", ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Ōkami")),
}  # fmt: skip
VISIBLE_POOL = 5
RARE = {"employees": "Admin", "tickets": "Archived", "books": "Anthology", "devices": "Aperture"}
"""A key near the start of the name order that occurs rarely and only bare: the id order must come
from sorting names, not from where (or how padded) a key first occurs."""
RARE_SHARE = 0.005
"""Visible rows draw from the first 5 values of a pool; held-out rows from all of them."""


class Lookup(Family):
    name = "normalise_lookup"
    title = "normalise repeated values into a lookup table"

    def draw(self, rng: random.Random) -> Params:
        table = pick(rng, sorted(DOMAINS))
        column, lookup, _ = DOMAINS[table]
        return {
            "table": table,
            "column": column,
            "lookup": lookup,
            "fk": f"{column}_id",
            "case": pick(rng, ("keep", "lower")),
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t, col, fk = p["table"], p["column"], p["fk"]
        source = Table(
            t,
            (
                Column("id", "INTEGER", primary_key=True),
                Column("title", "TEXT", notnull=True),
                Column(col, "TEXT"),
                Column("created_at", "TEXT"),
            ),
        )
        lookup = Table(
            p["lookup"], (Column("id", "INTEGER", primary_key=True), Column("name", "TEXT", notnull=True, unique=True))
        )
        target = replace_column(source, col, Column(fk, "INTEGER", references=(p["lookup"], "id")))
        return (
            Schema((source,), (Index(f"idx_{t}_{col}", t, (col,)),)),
            Schema((lookup, target), (Index(f"idx_{t}_{fk}", t, (fk,)),)),
        )

    def _key_sql(self, p: Params, expr: str) -> str:
        return f"lower(trim({expr}))" if p["case"] == "lower" else f"trim({expr})"

    def key(self, p: Params, value: str | None) -> str | None:
        k = sql_trim(value)
        if p["case"] == "lower":
            k = ascii_lower(k)
        return k or None

    def rules(self, p: Params) -> str:
        t, col, lk, fk = p["table"], p["column"], p["lookup"], p["fk"]
        lowered = (
            " and then lower-cased the way SQLite's lower() does it (only ASCII letters A-Z change; 'É' stays 'É')"
            if p["case"] == "lower"
            else " (letter case is kept: 'Sales' and 'sales' are different keys)"
        )
        return (
            f"Create table `{lk}` (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) and replace column `{col}` "
            f"of `{t}` by `{fk}` INTEGER REFERENCES {lk}(id), indexed. The key of a value is "
            f"the value with leading and trailing spaces (U+0020 only) removed{lowered}. NULL values and values "
            f"whose key is '' get `{fk}` = NULL. `{lk}` holds exactly one row per distinct non-empty key, name = "
            f"the key, with ids 1, 2, 3, ... assigned in ascending order of name compared as SQLite's default "
            f"BINARY collation does (byte order of UTF-8). Every row of `{t}` gets the id of its key. Keep every "
            f"row; `id`, `title` and `created_at` are unchanged. The old index on `{col}` goes with the column. "
            "Only U+0020 is removed: a key may keep tabs, newlines or non-breaking spaces at its ends, and spaces "
            "inside a key are kept, so such keys are keys of their own."
        )

    def _value(self, p: Params, rng: random.Random, hard: bool) -> str | None:
        pool = DOMAINS[p["table"]][2]
        if hard and rng.random() < RARE_SHARE:
            return RARE[p["table"]]
        if rng.random() < (0.15 if hard else 0.08):
            return pick(rng, (None, "", "  "))
        base = pick(rng, pool if hard else pool[:VISIBLE_POOL])
        variant = rng.random()
        if variant < (0.2 if hard else 0.1):
            base = base.upper()
        elif variant < (0.35 if hard else 0.2):
            base = base.lower()
        return values.pad(rng, base, 0.3 if hard else 0.15)

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = [
            (
                i,
                f"{values.word(rng).title()} {i}",
                self._value(p, rng, hard),
                values.date(rng) if rng.random() < 0.9 else None,
            )
            for i in ids(rng, n, 10_000 if hard else 1, taken)
        ]
        return {p["table"]: out}

    def context(self, p: Params, rows: Rows) -> Any:
        keys = {k for r in rows[p["table"]] if (k := self.key(p, r[2])) is not None}
        folded: dict[str, set[str]] = {}
        for k in keys:
            folded.setdefault(k.casefold(), set()).add(k)
        return sorted(keys), folded

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("title", "created_at")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t, pool = p["table"], DOMAINS[p["table"]][2]

        def row(rng: random.Random, fresh: Fresh, value: str | None, created: str | None = "") -> Row:
            i = fresh(t)
            return (i, f"{values.word(rng).title()} {i}", value, values.date(rng) if created == "" else created)

        def cls(name: str, texts: Any, member: Any) -> ValueClass:
            return ValueClass(
                name, t, lambda rng, k, fresh: {t: [row(rng, fresh, texts(rng, k))]}, lambda r, c: member(r[2], c)
            )

        def key(v: object) -> str | None:
            return self.key(p, v) if isinstance(v, str) else None

        trim = space_classes(
            t,
            "value",
            lambda r: (r[2],),
            lambda rng, k, fresh, text: {t: [row(rng, fresh, text)]},
            lambda rng: pick(rng, pool),
        )
        empty = (
            cls("NULL (foreign key NULL)", lambda rng, k: None, lambda v, c: v is None),
            cls("'' (foreign key NULL)", lambda rng, k: "", lambda v, c: v == ""),
        )
        if p["case"] == "keep":
            case = (
                cls("the same word in other ASCII capitals: another key", lambda rng, k: (str.upper, str.lower, str.swapcase)[k % 3](pick(rng, pool)),
                    lambda v, c: (q := key(v)) is not None and len(c[1][q.casefold()]) > 1),
                cls("non-ASCII capitals: another key", lambda rng, k: ("LÉGAL", "légal", "RÉSOLU", "BIOGRAFÍA", "ŌKAMI", "ōkami")[k], lambda v, c: (q := key(v)) is not None and not q.isascii() and q != q.lower()),
            )  # fmt: skip
        else:
            case = (
                cls("ASCII capitals: lower-cased into the same key", lambda rng, k: (str.upper, str.title, str.swapcase)[k % 3](pick(rng, pool)),
                    lambda v, c: isinstance(v, str) and v.strip(" ") != ascii_lower(v.strip(" "))),
                cls("non-ASCII capitals: only A-Z change ('É' stays)", lambda rng, k: ("LÉGAL", "Légal", "RÉSOLU", "BIOGRAFÍA", "ŌKAMI", "ÉCHO")[k],
                    lambda v, c: isinstance(v, str) and any(ch != ch.lower() and not ch.isascii() for ch in v)),
            )  # fmt: skip
        order = (
            cls("keys that sort before letters or between cases (BINARY: digits, 'A' < 'a', ASCII < non-ASCII)",
                lambda rng, k: ("0-day", "(none)", "ZZ top", "aardvark", "Ünïcode", "_misc")[k], lambda v, c: (q := key(v)) is not None and q[:1] in "0(Z_aÜ"),
            cls("keys that look like dates, times or numbers: kept as text", lambda rng, k: ("2024-01-01", "2024-01-01 10:00:00", "12:30", "007", "1e3", "2024-02-30")[k],
                lambda v, c: (q := key(v)) is not None and q[:1].isdigit()),
            cls("a key that occurs once", lambda rng, k: f"{pick(rng, pool)} {values.word(rng)} {k}", lambda v, c: (q := key(v)) is not None and q[-1:].isdigit()),
        )  # fmt: skip
        kept = (
            ValueClass(
                "created_at NULL (kept)",
                t,
                lambda rng, k, fresh: {t: [row(rng, fresh, pick(rng, pool), None)]},
                lambda r, c: r[3] is None,
            ),
        )
        return (
            Rule("key = the value with U+0020 (only) removed at both ends", trim),
            Rule("NULL, '' or only spaces: the foreign key is NULL", empty),
            Rule(
                "letter case is kept: keys differing in case differ"
                if p["case"] == "keep"
                else "keys are lower-cased the way SQLite's lower() does (A-Z only)",
                case,
            ),
            Rule("ids 1, 2, 3, ... in BINARY order of name; one lookup row per distinct key", order),
            Rule("keep every row; id, title, created_at unchanged", kept),
        )

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        source = rows[p["table"]]
        names = sorted({k for r in source if (k := self.key(p, r[2])) is not None})
        number = {name: n for n, name in enumerate(names, start=1)}
        return {
            p["lookup"]: [(number[name], name) for name in names],
            p["table"]: [(i, title, number.get(self.key(p, v) or ""), at) for i, title, v, at in source],
        }

    def migration(self, p: Params) -> str:
        t, col, lk = p["table"], p["column"], p["lookup"]
        _, target = self.schemas(p)
        lookup = target.table(lk)
        fill = (
            f"INSERT INTO {lk} (id, name)\n  SELECT row_number() OVER (ORDER BY k), k\n"
            f"  FROM (SELECT DISTINCT {self._key_sql(p, col)} AS k FROM {t}) WHERE k <> '';"
        )
        fk = f"(SELECT {lk}.id FROM {lk} WHERE {lk}.name = {self._key_sql(p, t + '.' + col)})"
        body = rebuild(target.table(t), {p["fk"]: fk}, t, target.indexes)
        return "\n".join((lookup.ddl(), fill, body))

    def examples(self, p: Params) -> dict[str, list[Row]]:
        pool = DOMAINS[p["table"]][2]
        vals = [f" {pool[0]} ", pool[0].upper(), pool[3], None, "  ", pool[3].lower()]
        return {p["table"]: [(k + 1, f"Example {k + 1}", v, None) for k, v in enumerate(vals)]}


FAMILY = Lookup()
