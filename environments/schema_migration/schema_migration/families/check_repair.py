"""Add CHECK constraints on a quantity and a rate, repairing the rows that violate them."""

from __future__ import annotations

import random
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, rebuild
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
            "columns (`name`, `updated_at`, NULLs included) are unchanged. The CHECKs must accept and refuse later "
            "writes exactly as written: no rounding, casting or type test of their own."
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

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = [
            (
                i,
                f"{values.word(rng)} {i}",
                self._qty(rng, hard),
                self._rate(rng, hard),
                values.date(rng) if rng.random() < 0.9 else None,
            )
            for i in ids(rng, n, 10_000 if hard else 1, taken)
        ]
        return {p["table"]: out}

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("name", "updated_at")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t, cap = p["table"], p["cap"]

        def cls(
            name: str, qty: Any = None, rate: Any = None, member: Any = None, updated: Any = "", label: Any = None
        ) -> ValueClass:
            def make(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
                i = fresh(t)
                q = qty[k % len(qty)] if qty else randrange(rng, 0, 400)
                r = rate[k % len(rate)] if rate else round(rng.random(), 3)
                u = values.date(rng) if updated == "" else updated
                return {t: [(i, label(rng, k, i) if label else f"{values.word(rng)} {i}", q, r, u)]}

            return ValueClass(name, t, make, lambda row, _c: member(row))

        qty = [
            cls("negative: becomes 0", qty=(-1, -7, -(2**31), -(2**63), -2, -100), member=lambda r: r[2] < 0),
            cls("0 and 1: kept", qty=(0, 1), member=lambda r: r[2] in (0, 1)),
        ]
        if cap is None:
            qty.append(
                cls("very large: kept (no cap)", qty=(INT64_MAX, 10**12, 10_001), member=lambda r: r[2] > 10_000)
            )
        else:
            qty += [
                cls(
                    f"at the cap {cap} and just below: kept",
                    qty=(cap, cap - 1),
                    member=lambda r: r[2] in (cap, cap - 1),
                ),
                cls(
                    f"just above the cap {cap}: becomes {cap}",
                    qty=(cap + 1, cap + 2),
                    member=lambda r: r[2] in (cap + 1, cap + 2),
                ),
                cls(
                    f"far above the cap: becomes {cap}",
                    qty=(INT64_MAX, cap * 10, 10**12),
                    member=lambda r: r[2] > cap + 2,
                ),
            ]
        top = 10_000 if cap is None else cap
        qty.append(
            cls("not a whole number (a REAL in the INTEGER column): kept inside the bounds, clamped outside",
                qty=(0.5, 2.5, top - 0.5, -0.5) + ((top + 0.5,) if cap is not None else (123.25,)), member=lambda r: isinstance(r[2], float))
        )  # fmt: skip
        rate = [
            cls("NULL: stays NULL", rate=(None,), member=lambda r: r[3] is None),
            cls(
                "negative (and -0.0): becomes 0.0",
                rate=(-0.2, -0.0001, -1e6, -1.0),
                member=lambda r: r[3] is not None and r[3] < 0,
            ),
            cls(
                "exactly 0 and 1, and -0.0: kept",
                rate=(0.0, 1.0, -0.0),
                member=lambda r: r[3] is not None and r[3] in (0.0, 1.0),
            ),
            cls(
                "just inside (0, 1): kept",
                rate=(0.0001, 0.999, 0.5, 0.9999999),
                member=lambda r: r[3] is not None and 0 < r[3] < 1,
            ),
            cls("just above 1", rate=(1.0000001, 1.004, 1.01), member=lambda r: r[3] is not None and 1 < r[3] < 1.1),
        ]
        if p["percent"]:
            rate += [
                cls(
                    "percentages in (1, 100]: divided by 100",
                    rate=(1.5, 2.0, 15.0, 99.5, 99.99, 100.0),
                    member=lambda r: r[3] is not None and 1.1 <= r[3] <= 100,
                ),
                cls(
                    "just above 100: becomes 1.0",
                    rate=(100.0001, 100.5, 101.0),
                    member=lambda r: r[3] is not None and 100 < r[3] < 102,
                ),
                cls(
                    "far above 100: becomes 1.0",
                    rate=(250.0, 1e6, 1e300),
                    member=lambda r: r[3] is not None and r[3] >= 102,
                ),
            ]
        else:
            rate.append(
                cls(
                    "well above 1 (even 15 or 100): becomes 1.0",
                    rate=(1.5, 15.0, 100.0, 250.0, 1e300),
                    member=lambda r: r[3] is not None and r[3] >= 1.1,
                )
            )
        others = (
            cls("updated_at NULL (kept)", updated=None, member=lambda r: r[4] is None),
            cls(
                "name with capitals and stray spaces (kept)",
                member=lambda r: r[1] != r[1].strip(" ") or r[1] != r[1].lower(),
                label=lambda rng, k, i: (f" {values.word(rng).title()} {i}", f"{values.word(rng).upper()} {i}  ")[
                    k % 2
                ],
            ),
        )
        return (
            Rule(
                f"{p['qty']}: negative becomes 0" + (f"; above {cap} becomes {cap}" if cap is not None else ""),
                tuple(qty),
            ),
            Rule(
                f"{p['rate']}: NULL stays; negative becomes 0.0; "
                + ("(1, 100] divided by 100; above 100 becomes 1.0" if p["percent"] else "above 1 becomes 1.0"),
                tuple(rate),
            ),
            Rule("keep every row; other columns unchanged", others),
        )

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
        return {p["table"]: [(i, n, self.fix_qty(p, q), self.fix_rate(p, r), u) for i, n, q, r, u in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        q, r = p["qty"], p["rate"]
        qty = f"max({q}, 0)" if p["cap"] is None else f"min(max({q}, 0), {p['cap']})"
        percent = f"WHEN {r} > 1 AND {r} <= 100 THEN {r} / 100.0 " if p["percent"] else ""
        rate = f"CASE WHEN {r} IS NULL THEN NULL WHEN {r} < 0 THEN 0.0 {percent}WHEN {r} > 1 THEN 1.0 ELSE {r} END"
        _, target = self.schemas(p)
        return rebuild(target.tables[0], {q: qty, r: rate}, p["table"], target.indexes)

    def write_values(self, p: Params) -> dict[str, tuple[object, ...]]:
        """Every bound of the two CHECKs and its neighbours, extremes, and values of other types."""
        t, q, r, cap = p["table"], p["qty"], p["rate"], p["cap"]
        bounds: tuple[object, ...] = (
            -1,
            0,
            1,
            2**63 - 1,
            -(2**63),
            -5,
            5.5,
            -0.5,
            -0.001,
            -0.004,
            1e20,
            "7",
            " 7 ",
            "7.0",
            "0x10",
            "1e3",
            "-3abc",
        )
        if cap is not None:
            bounds += (cap - 1, cap, cap + 1, cap + 0.5, cap + 0.004, cap + 1000, float(cap), str(cap + 1))
        rates: tuple[object, ...] = (
            -0.01, -0.0, -1e-9, 0, 0.0, 1e-9, 0.5, 0.999, 0.999999999, 1, 1.0, 1.0000001, 1.004, 1.005, 1.5,
            2.5, 99.5, 100, 1e6, -1e6, "0.5", " 0.5 ", "1", "1.004", ".5", "1e-1", "0x1", 1e308,
        )  # fmt: skip
        return {f"{t}.{q}": bounds, f"{t}.{r}": rates}

    def examples(self, p: Params) -> dict[str, list[Row]]:
        pairs = [
            (-3, 0.25),
            (12, 15.0),
            (7, 250.0),
            (0, -0.5),
            (p["cap"] or 9_000_000, None),
            ((p["cap"] or 0) + 1, 1.0),
        ]
        return {p["table"]: [(k + 1, f"item {k + 1}", q, r, None) for k, (q, r) in enumerate(pairs)]}


FAMILY = CheckRepair()
