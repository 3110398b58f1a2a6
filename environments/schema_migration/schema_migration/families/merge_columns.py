"""Merge several address-part columns into one, skipping blank parts, with a fixed separator."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass, space_classes
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
            f"(exactly these characters, nothing else added). If no part remains, `{p['target']}` is {nothing}. "
            "Only U+0020 is removed: tabs, newlines, non-breaking and other Unicode spaces are kept (a part of only "
            "such characters is not blank), and spaces inside a part are kept as they are. Keep every row; `id`, "
            "`label`, `updated_at` and the plain (not unique) index on label are unchanged."
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

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
            parts = tuple(self._part(rng, part, hard) for part in p["parts"])
            if rng.random() < 0.05:
                parts = (None,) * len(parts)
            out.append((i, f"{values.word(rng)}-{i}", *parts, values.date(rng) if rng.random() < 0.9 else None))
        return {p["table"]: out}

    def context(self, p: Params, rows: Rows) -> Any:
        return Counter(r[1] for r in rows[p["table"]])

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("label", "updated_at")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t, k_parts = p["table"], len(p["parts"])

        def plain(rng: random.Random, part: str) -> str:
            value = self._part(rng, part, False)
            while value is None or sql_trim(value) in ("", "-", "x, y"):
                value = self._part(rng, part, False)
            return sql_trim(value)

        def row(
            rng: random.Random, fresh: Fresh, parts: list[str | None], label: str = "", updated: str | None = ""
        ) -> Row:
            i = fresh(t)
            return (i, label or f"{values.word(rng)}-{i}", *parts, values.date(rng) if updated == "" else updated)

        def with_part(rng: random.Random, k: int, fresh: Fresh, text: str | None) -> dict[str, list[Row]]:
            parts: list[str | None] = [plain(rng, x) for x in p["parts"]]
            parts[(k // 2) % k_parts if k % 2 == 0 else k_parts - 1 - (k // 2) % k_parts] = (
                text  # first parts and last parts
            )
            return {t: [row(rng, fresh, parts)]}

        def parts_of(r: Row) -> tuple[Any, ...]:
            return tuple(r[2 : 2 + k_parts])

        def cls(name: str, make: Any, member: Any) -> ValueClass:
            return ValueClass(name, t, make, member)

        def blanks(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            choices = (None, "", " ", "   ")
            return {t: [row(rng, fresh, [choices[(k + j) % 4] for j in range(k_parts)])]}

        def alone(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            parts: list[str | None] = [(None, "", "  ")[(k + j) % 3] for j in range(k_parts)]
            parts[k % k_parts] = (
                " " + plain(rng, p["parts"][k % k_parts]) if k % 2 else plain(rng, p["parts"][k % k_parts])
            )
            return {t: [row(rng, fresh, parts)]}

        def blank(v: object) -> bool:
            return v is None or (isinstance(v, str) and v.strip(" ") == "")

        sep = str(p["sep"])
        marks = sep.strip(" ")

        def edge_sep(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            parts: list[str | None] = [plain(rng, x) for x in p["parts"]]
            word = (plain(rng, p["parts"][0]), "", " ")[k // 2 % 3]  # the mark alone, or padded, as the whole part too
            parts[0 if k % 2 == 0 else -1] = marks + word if k % 2 == 0 else word + marks
            return {t: [row(rng, fresh, parts)]}

        def at_edge(r: Row) -> bool:
            kept = [sql_trim(v) for v in parts_of(r) if not blank(v)]
            return bool(kept) and bool(kept[0]) and bool(kept[-1]) and (kept[0][0] in marks or kept[-1][-1] in marks)

        trim = space_classes(t, "a part", parts_of, with_part, lambda rng: plain(rng, pick(rng, p["parts"])))
        skip = (
            cls("a NULL part (skipped)", lambda rng, k, fresh: with_part(rng, k, fresh, None), lambda r, _c: None in parts_of(r) and not all(blank(v) for v in parts_of(r))),
            cls("an empty part '' (skipped)", lambda rng, k, fresh: with_part(rng, k, fresh, ""), lambda r, _c: "" in parts_of(r) and not all(blank(v) for v in parts_of(r))),
            cls("the first part blank: no separator in front", lambda rng, k, fresh: with_part(rng, 0, fresh, (None, "", "  ")[k % 3]), lambda r, _c: blank(parts_of(r)[0]) and not all(blank(v) for v in parts_of(r))),
            cls("the last part blank: no separator at the end", lambda rng, k, fresh: with_part(rng, 1, fresh, (None, "", "  ")[k % 3]), lambda r, _c: blank(parts_of(r)[-1]) and not all(blank(v) for v in parts_of(r))),
            cls("exactly one part not blank: no separator at all", alone, lambda r, _c: sum(not blank(v) for v in parts_of(r)) == 1),
            cls("a part holding the separator's text or punctuation (kept)", lambda rng, k, fresh: with_part(rng, k, fresh, ("x" + sep + "y", "-", sep.strip() or "|", sep)[k % 4]), lambda r, _c: any(isinstance(v, str) and (sep.strip(" ") and sep.strip(" ") in v or v.strip(" ") in ("-", "|")) for v in parts_of(r))),
            cls("the first part starting, or the last ending, with a character of the separator (kept)", edge_sep, lambda r, _c: at_edge(r)),
            cls("capitals and non-ASCII letters in a part (kept)", lambda rng, k, fresh: with_part(rng, k, fresh, plain(rng, pick(rng, p["parts"])).upper() + " Ærø"), lambda r, _c: any(isinstance(v, str) and "Ærø" in v for v in parts_of(r))),
        )  # fmt: skip
        nothing = "NULL" if p["empty"] == "null" else "''"
        empty = (
            cls(
                "every part NULL",
                lambda rng, k, fresh: {t: [row(rng, fresh, [None] * k_parts)]},
                lambda r, _c: all(v is None for v in parts_of(r)),
            ),
            cls(
                "every part NULL or blank, mixed",
                blanks,
                lambda r, _c: all(blank(v) for v in parts_of(r)) and not all(v is None for v in parts_of(r)),
            ),
        )
        others = (
            cls("updated_at NULL (kept)", lambda rng, k, fresh: {t: [row(rng, fresh, [plain(rng, x) for x in p["parts"]], updated=None)]}, lambda r, _c: r[-1] is None),
            cls("a label shared by several rows (the index is not unique)", lambda rng, k, fresh: {t: [row(rng, fresh, [plain(rng, x) for x in p["parts"]], label=label) for label in [f"shared-{values.word(rng)}-{k}"] * 2]}, lambda r, c: c[r[1]] > 1),
            cls("a label with spaces and capitals (kept)", lambda rng, k, fresh: {t: [row(rng, fresh, [plain(rng, x) for x in p["parts"]], label=f" {values.word(rng).upper()}  {k} ")]}, lambda r, _c: r[1] != r[1].strip(" ")),
        )  # fmt: skip
        return (
            Rule("remove U+0020 (only) at both ends of each part", trim),
            Rule(f"skip NULL and blank parts; join the rest in order with {sep!r} exactly", skip),
            Rule(f"no part left: the result is {nothing}", empty),
            Rule("keep every row; id, label, updated_at and the plain index on label are unchanged", others),
        )

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
        rows = [(k + 1, f"example-{k + 1}", *(samples[x][k] for x in p["parts"]), None) for k in range(3)]
        rows.append((4, "example-4", *(None for _ in p["parts"]), None))
        return {p["table"]: rows}


FAMILY = MergeColumns()
