"""Rename a table and some of its columns, keeping a compatibility view under the old names."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids
from schema_migration.schema import Affinity, Column, Index, Row, Rows, Schema, Table, View

__all__ = ["FAMILY", "RenameView"]

PAIRS = (
    ("clients", "customers", "orders"),
    ("staff", "employees", "shifts"),
    ("parts", "components", "part_usage"),
    ("vendors", "partners", "contracts"),
)
RENAMES = (("nm", "name"), ("tel", "phone"), ("addr", "address"), ("created", "created_at"))


class RenameView(Family):
    name = "rename_with_view"
    title = "rename, keeping a compatibility view"

    def draw(self, rng: random.Random) -> Params:
        old, new, child = pick(rng, PAIRS)
        renames = sorted(rng.sample(range(len(RENAMES)), rng.randint(1, 2)))
        return {
            "old": old,
            "new": new,
            "child": child,
            "fk": f"{old.rstrip('s')}_id",
            "renames": [list(RENAMES[k]) for k in renames],
        }

    def _table(self, p: Params, name: str, renamed: bool) -> Table:
        mapping = dict(p["renames"]) if renamed else {}
        cols: tuple[tuple[str, Affinity, bool, bool], ...] = (
            ("id", "INTEGER", True, True),
            ("nm", "TEXT", True, False),
            ("tel", "TEXT", False, False),
            ("addr", "TEXT", False, False),
            ("created", "TEXT", False, False),
        )
        return Table(
            name, tuple(Column(mapping.get(c, c), k, notnull=nn and not pk, primary_key=pk) for c, k, nn, pk in cols)
        )

    def _child(self, p: Params, parent: str) -> Table:
        return Table(
            p["child"],
            (
                Column("id", "INTEGER", primary_key=True),
                Column(p["fk"], "INTEGER", references=(parent, "id")),
                Column("detail", "TEXT"),
            ),
        )

    def view(self, p: Params) -> View:
        mapping = dict(p["renames"])
        old_cols = self._table(p, p["old"], False).column_names
        select = ", ".join(f"{mapping[c]} AS {c}" if c in mapping else c for c in old_cols)
        return View(p["old"], old_cols, f"SELECT {select} FROM {p['new']}", key="id")

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        tel_old = Index(f"idx_{p['old']}_tel", p["old"], ("tel",))
        tel_new = Index(f"idx_{p['old']}_tel", p["new"], (dict(p["renames"]).get("tel", "tel"),))
        child_idx = Index(f"idx_{p['child']}_{p['fk']}", p["child"], (p["fk"],))
        source = Schema((self._table(p, p["old"], False), self._child(p, p["old"])), (tel_old, child_idx))
        target = Schema(
            (self._table(p, p["new"], True), self._child(p, p["new"])), (tel_new, child_idx), (self.view(p),)
        )
        return source, target

    def rules(self, p: Params) -> str:
        renames = ", ".join(f"`{a}` to `{b}`" for a, b in p["renames"])
        tel = dict(p["renames"]).get("tel", "tel")
        return (
            f"Rename table `{p['old']}` to `{p['new']}` and rename its columns {renames}. The foreign key "
            f"`{p['child']}`.`{p['fk']}` must then reference `{p['new']}`(id), and the index on `{p['new']}`(`{tel}`) "
            f"must exist (its name does not matter). For old readers, create a view named `{p['old']}` with exactly the old "
            f"columns under their old names ({', '.join(self._table(p, p['old'], False).column_names)}), one "
            f"row per row of `{p['new']}`, showing every value exactly as stored (later rows too). No data changes: "
            "every row keeps all its values exactly (spaces, letter case, NULLs, texts that are not dates)."
        )

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        parent = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
            first, last = values.person(rng)
            tel = pick(
                rng,
                (
                    None,
                    "",
                    f"+47 {randrange(rng, 10**7, 10**8)}",
                    f"({randrange(rng, 100, 999)}) 555-01{randrange(rng, 10, 99)}",
                ),
            )
            addr = pick(rng, (None, pick(rng, values.STREETS), " " + pick(rng, values.CITIES) + " "))
            parent.append((i, f"{first} {last}", tel, addr, values.date(rng) if rng.random() < 0.8 else None))
        parent_ids = [r[0] for r in parent]
        child = [
            (j, pick(rng, parent_ids) if rng.random() < 0.9 else None, pick(rng, (None, values.word(rng))))
            for j in ids(rng, max(1, n // 2), 50_000 if hard else 1, taken)
        ]
        return {p["old"]: parent, p["child"]: child}

    def context(self, p: Params, rows: Rows) -> Any:
        return Counter(r[2] for r in rows[p["old"]] if r[2] is not None), {r[1] for r in rows[p["child"]]}

    def derived(self, p: Params) -> dict[str, str]:
        return {p["new"]: p["old"], p["old"]: p["old"], p["child"]: p["child"]}

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["old"]: ("nm", "tel", "addr", "created"), p["child"]: ("detail",)}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        old, child = p["old"], p["child"]

        def parent(
            rng: random.Random,
            fresh: Fresh,
            nm: str = "",
            tel: Any = "",
            addr: Any = "",
            created: Any = "",
            kids: int = 1,
        ) -> dict[str, list[Row]]:
            first, last = values.person(rng)
            row = (
                fresh(old),
                nm or f"{first} {last}",
                f"+47 {randrange(rng, 10**7, 10**8)}" if tel == "" else tel,
                pick(rng, values.STREETS) if addr == "" else addr,
                values.date(rng) if created == "" else created,
            )
            return {old: [row], child: [(fresh(child), row[0], values.word(rng)) for _ in range(kids)]}

        def twins(rng: random.Random, fresh: Fresh, tel: str) -> dict[str, list[Row]]:
            a, b = parent(rng, fresh, tel=tel), parent(rng, fresh, tel=tel)
            return {old: a[old] + b[old], child: a[child] + b[child]}

        def edge_id(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            rows = parent(rng, fresh)
            i = (0, -1, -7, -(2**63), -(2**31), 2**31 + 7)[k]
            return {old: [(i, *rows[old][0][1:])], child: [(j, i, w) for j, _, w in rows[child]]}

        def cls(name: str, make: Any, member: Any, table: str = old) -> ValueClass:
            return ValueClass(name, table, make, member)

        kept = (
            cls("nm with U+0020, tabs or capitals at the ends (kept, not trimmed)",
                lambda rng, k, fresh: parent(rng, fresh, nm=(" Ann Lee ", "\tBo Ek", "ANN  LEE", "Zoë Ng\u00a0", "  mei", "O'BRIEN ")[k]),
                lambda r, c: r[1] != r[1].strip() or "  " in r[1] or r[1].isupper()),
            cls("tel NULL or '' (kept apart)", lambda rng, k, fresh: parent(rng, fresh, tel=(None, "")[k % 2]), lambda r, c: r[2] in (None, "")),
            cls("tel shared by several rows (the index is not unique)",
                lambda rng, k, fresh: twins(rng, fresh, f"+47 5550{k:04d}"),
                lambda r, c: r[2] not in (None, "") and c[0][r[2]] > 1),
            cls("addr padded or NULL (kept)", lambda rng, k, fresh: parent(rng, fresh, addr=(" 1 Main St ", None, "\t5 Elm Ave", "PO Box 12  ")[k % 4]),
                lambda r, c: r[3] is None or r[3] != r[3].strip()),
            cls("created a timestamp, not a date, or NULL (kept exactly)",
                lambda rng, k, fresh: parent(rng, fresh, created=(values.timestamp(rng), "soon", None, "2024-02-30", " 2024-01-01", "01/02/2024")[k]),
                lambda r, c: r[4] is None or len(r[4]) != 10 or r[4][4] != "-" or r[4][8:] > "28"),
            cls("ids at the edges: 0, negative, beyond 32 bits (rows like any other)", edge_id, lambda r, c: r[0] <= 0 or r[0] > 2**31),
            cls("a row with no child rows", lambda rng, k, fresh: parent(rng, fresh, kids=0), lambda r, c: r[0] not in c[1]),
            cls("child rows with a NULL foreign key (kept)",
                lambda rng, k, fresh: {child: [(fresh(child), None, (None, values.word(rng))[k % 2])]}, lambda r, c: r[1] is None, child),
        )  # fmt: skip
        return (Rule("no data changes; the view shows every row of the new table under the old names", kept),)

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        parent = list(rows[p["old"]])
        return {p["new"]: parent, p["child"]: list(rows[p["child"]]), p["old"]: parent}

    def migration(self, p: Params) -> str:
        lines = [f"ALTER TABLE {p['old']} RENAME TO {p['new']};"]
        lines += [f"ALTER TABLE {p['new']} RENAME COLUMN {a} TO {b};" for a, b in p["renames"]]
        lines.append(self.view(p).ddl())
        return "\n".join(lines)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        return {
            p["old"]: [(1, "Ann Lee", "+47 12345678", "1 Main St", "2024-01-01")],
            p["child"]: [(1, 1, "first")],
        }


FAMILY = RenameView()
