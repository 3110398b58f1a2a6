"""Add CHECK constraints on a quantity and a rate, repairing the rows that violate them."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, Probe, ids, rebuild
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "CheckRepair"]

INT64_MAX = 2**63 - 1
QTY_EDGES = (0, -1, 1, -7, -(2**31), INT64_MAX, 499, 500, 501, 9_999, 10_000, 10_001, 99_999)
"""Every bound the rules compare a quantity against (0 and each cap) with its neighbours, and extremes."""
RATE_EDGES = (
    -1e6, -0.2, -0.0001, 0.0, 0.0001, 0.999, 1.0, 1.0000001, 1.5, 2.0, 7.5, 15.0,
    99.0, 99.5, 99.99, 100.0, 100.0001, 100.5, 101.0, 250.0,
)  # fmt: skip
"""Every bound the rules compare a rate against (0, 1, and 100 for percentages), values just inside
and just outside each, and values between them: each is about 2 % of the held-out rows (NULL, drawn
apart, 6 %), above the 1 % a wrong rule must spoil to score at most 0.5."""


class CheckRepair(Family):
    name = "check_repair"
    title = "add a CHECK and repair violators"

    def draw(self, rng: random.Random) -> Params:
        return {
            "table": pick(rng, ("inventory", "stock_items", "bins")),
            "qty": pick(rng, ("quantity", "on_hand", "stock")),
            "cap": pick(rng, (None, 500, 10_000)),
            "rate": pick(rng, ("discount", "tax_rate", "fill_ratio")),
            "percent": rng.random() < 0.5,
        }

    def _qty_check(self, p: Params) -> str:
        q = p["qty"]
        return f"{q} >= 0" if p["cap"] is None else f"{q} >= 0 AND {q} <= {p['cap']}"

    def _rate_check(self, p: Params) -> str:
        return f"{p['rate']} >= 0 AND {p['rate']} <= 1"

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t = p["table"]

        def table(checked: bool) -> Table:
            return Table(
                t,
                (
                    Column("id", "INTEGER", primary_key=True),
                    Column("name", "TEXT", notnull=True),
                    Column(p["qty"], "INTEGER", notnull=True, check=self._qty_check(p) if checked else None),
                    Column(p["rate"], "REAL", check=self._rate_check(p) if checked else None),
                    Column("updated_at", "TEXT"),
                ),
            )

        index = (Index(f"idx_{t}_name", t, ("name",)),)
        return Schema((table(False),), index), Schema((table(True),), index)

    def rules(self, p: Params) -> str:
        q, r = p["qty"], p["rate"]
        cap = "" if p["cap"] is None else f" A value above {p['cap']} becomes {p['cap']}."
        percent = (
            " A value above 1 and at most 100 is a percentage: it becomes value / 100 (as REAL division)."
            " A value above 100 becomes 1.0."
            if p["percent"]
            else " A value above 1 becomes 1.0."
        )
        return (
            f"Add CHECK ({self._qty_check(p)}) to `{p['table']}`.`{q}` and CHECK ({self._rate_check(p)}) to "
            f"`{r}` (SQLite cannot add a CHECK in place: rebuild the table; keep the index on name). Repair the "
            f"rows first. `{q}`: a negative value becomes 0.{cap} `{r}`: NULL stays NULL; a negative value "
            f"becomes 0.0.{percent} Values already inside the bounds are unchanged. Keep every row; other "
            "columns are unchanged."
        )

    def _qty(self, rng: random.Random, hard: bool) -> int:
        if rng.random() < (0.35 if hard else 0.2):
            return pick(rng, QTY_EDGES)
        return randrange(rng, 0, 400)

    def _rate(self, rng: random.Random, hard: bool) -> float | None:
        draw = rng.random()
        if draw < (0.06 if hard else 0.04):
            return None
        if draw < (0.5 if hard else 0.3):
            return pick(rng, RATE_EDGES)
        return round(rng.random(), 3)

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out = [
            (i, f"{values.word(rng)} {i}", self._qty(rng, hard), self._rate(rng, hard), values.date(rng))
            for i in ids(rng, n, 10_000 if hard else 1)
        ]
        return {p["table"]: out}

    def fix_qty(self, p: Params, q: int) -> int:
        q = max(q, 0)
        return q if p["cap"] is None else min(q, p["cap"])

    def fix_rate(self, p: Params, r: float | None) -> float | None:
        if r is None:
            return None
        if r < 0:
            return 0.0
        if p["percent"] and 1 < r <= 100:
            return r / 100
        return 1.0 if r > 1 else r

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        return {
            p["table"]: [(i, n, self.fix_qty(p, q), self.fix_rate(p, r), u) for i, n, q, r, u in rows[p["table"]]]
        }

    def migration(self, p: Params) -> str:
        q, r = p["qty"], p["rate"]
        qty = f"max({q}, 0)" if p["cap"] is None else f"min(max({q}, 0), {p['cap']})"
        percent = f"WHEN {r} > 1 AND {r} <= 100 THEN {r} / 100.0 " if p["percent"] else ""
        rate = f"CASE WHEN {r} IS NULL THEN NULL WHEN {r} < 0 THEN 0.0 {percent}WHEN {r} > 1 THEN 1.0 ELSE {r} END"
        _, target = self.schemas(p)
        return rebuild(target.tables[0], {q: qty, r: rate}, p["table"], target.indexes)

    def probes(self, p: Params) -> tuple[Probe, ...]:
        t, q, r = p["table"], p["qty"], p["rate"]
        top = p["cap"] if p["cap"] is not None else INT64_MAX

        def insert(k: int, qty: int, rate: float | None) -> str:
            return f"INSERT INTO {t} (id, name, {q}, {r}) VALUES ({-k}, 'probe', {qty}, {'NULL' if rate is None else rate})"

        probes = [
            Probe(insert(1, 0, 0.0), False, f"{q} = 0 and {r} = 0 are accepted"),
            Probe(insert(2, top, 1.0), False, f"{q} = {top} and {r} = 1 are accepted"),
            Probe(insert(3, -1, 0.5), True, f"CHECK rejects {q} = -1"),
            Probe(insert(4, 1, 1.5), True, f"CHECK rejects {r} = 1.5"),
            Probe(insert(5, 1, -0.01), True, f"CHECK rejects {r} = -0.01"),
            # Several values per side, far ones too, so a CHECK shaped to the first probe fails.
            Probe(insert(7, -5, 0.5), True, f"CHECK rejects {q} = -5"),
            Probe(insert(8, -(2**63), 0.5), True, f"CHECK rejects {q} = {-(2**63)}"),
            Probe(insert(9, 1, 2.5), True, f"CHECK rejects {r} = 2.5"),
            Probe(insert(10, 1, 1e6), True, f"CHECK rejects {r} = 1e6"),
            Probe(insert(11, 1, -1e6), True, f"CHECK rejects {r} = -1e6"),
            # An UPDATE too: a trigger on INSERT alone does not stand in for a CHECK.
            Probe(f"UPDATE {t} SET {q} = -3 WHERE id = (SELECT min(id) FROM {t})", True, f"CHECK rejects an UPDATE to {q} = -3"),
            Probe(f"UPDATE {t} SET {r} = 3.0 WHERE id = (SELECT min(id) FROM {t})", True, f"CHECK rejects an UPDATE to {r} = 3"),
        ]
        if p["cap"] is not None:
            probes.append(Probe(insert(6, p["cap"] + 1, 0.5), True, f"CHECK rejects {q} = {p['cap'] + 1}"))
            probes.append(Probe(insert(12, p["cap"] + 1000, 0.5), True, f"CHECK rejects {q} = {p['cap'] + 1000}"))
        return tuple(probes)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        pairs = [(-3, 0.25), (12, 15.0), (7, 250.0), (0, -0.5), (p["cap"] or 9_000_000, None), ((p["cap"] or 0) + 1, 1.0)]
        return {p["table"]: [(k + 1, f"item {k + 1}", q, r, None) for k, (q, r) in enumerate(pairs)]}


FAMILY = CheckRepair()
