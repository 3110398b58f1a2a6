"""Merge several address-part columns into one, skipping blank parts, with a fixed separator."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, literal, rebuild, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "MergeColumns"]

PARTS = ("street", "city", "region", "postcode", "country")


class MergeColumns(Family):
    name = "merge_columns"
    title = "merge columns"

    def draw(self, rng: random.Random) -> Params:
        k = rng.randint(2, 4)
        chosen = set(rng.sample(PARTS, k))
        parts = [part for part in PARTS if part in chosen]
        return {
            "table": pick(rng, ("addresses", "locations", "venues", "sites")),
            "parts": parts,
            "target": pick(rng, ("full_address", "address_line", "location_text")),
            "sep": pick(rng, (", ", " / ", " | ", "; ")),
            "empty": pick(rng, ("null", "empty")),
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t = p["table"]
        head = (Column("id", "INTEGER", primary_key=True), Column("label", "TEXT", notnull=True))
        tail = (Column("updated_at", "TEXT"),)
        source = Table(t, head + tuple(Column(part, "TEXT") for part in p["parts"]) + tail)
        target = Table(t, head + (Column(p["target"], "TEXT", notnull=p["empty"] == "empty"),) + tail)
        index = (Index(f"idx_{t}_label", t, ("label",)),)
        return Schema((source,), index), Schema((target,), index)

    def rules(self, p: Params) -> str:
        parts = ", ".join(f"`{x}`" for x in p["parts"])
        nothing = "NULL" if p["empty"] == "null" else "'' (empty text)"
        null = " (nullable)" if p["empty"] == "null" else " NOT NULL"
        return (
            f"Replace columns {parts} of `{p['table']}` by one column `{p['target']}` TEXT{null}. Take "
            f"the parts in exactly this order: {parts}. Remove leading and trailing spaces (U+0020 only) from "
            f"each part; skip parts that are NULL or become ''. Join the remaining parts with the separator {literal(p['sep'])} "
            f"(exactly these characters, nothing else added). If no part remains, `{p['target']}` is {nothing}. Keep every row; `id`, `label`, `updated_at` and the index "
            "on label are unchanged."
        )

    def _part(self, rng: random.Random, part: str, hard: bool) -> str | None:
        if rng.random() < (0.35 if hard else 0.2):
            return pick(rng, (None, "", "   ", " - ", "x, y"))
        value = {
            "street": lambda: pick(rng, values.STREETS),
            "city": lambda: pick(rng, values.CITIES),
            "region": lambda: pick(rng, values.REGIONS),
            "postcode": lambda: f"{randrange(rng, 100_000):05d}",
            "country": lambda: pick(rng, values.COUNTRIES),
        }[part]()
        return values.pad(rng, value, 0.25 if hard else 0.1)

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1):
            parts = tuple(self._part(rng, part, hard) for part in p["parts"])
            if rng.random() < 0.05:
                parts = (None,) * len(parts)
            out.append((i, f"{values.word(rng)}-{i}", *parts, values.date(rng) if rng.random() < 0.9 else None))
        return {p["table"]: out}

    def merge(self, p: Params, parts: tuple[str | None, ...]) -> str | None:
        kept = [sql_trim(x) for x in parts if sql_trim(x) != ""]
        if kept:
            return str(p["sep"]).join(kept)
        return None if p["empty"] == "null" else ""

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        k = len(p["parts"])
        return {p["table"]: [(r[0], r[1], self.merge(p, r[2 : 2 + k]), r[2 + k]) for r in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        sep = literal(p["sep"])
        pieces = " || ".join(f"coalesce({sep} || nullif(trim({x}), ''), '')" for x in p["parts"])
        joined = f"substr({pieces}, {len(p['sep']) + 1})"
        if p["empty"] == "null":
            joined = f"nullif({joined}, '')"
        _, target = self.schemas(p)
        return rebuild(target.tables[0], {p["target"]: joined}, p["table"], target.indexes)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        samples = {
            "street": ("  1 Main St ", None, "PO Box 12"),
            "city": ("Zürich", "  ", "Oslo"),
            "region": (None, "Québec", ""),
            "postcode": ("08001", "", " 0150 "),
            "country": ("CH", "CA", None),
        }
        rows = [
            (k + 1, f"example-{k + 1}", *(samples[x][k] for x in p["parts"]), None) for k in range(3)
        ]
        rows.append((4, "example-4", *(None for _ in p["parts"]), None))
        return {p["table"]: rows}


FAMILY = MergeColumns()
