"""Add a foreign key to a child table, handling orphans (set NULL, delete, or point at a placeholder parent)."""

from __future__ import annotations

import random
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass
from schema_migration.values import pick, randrange
from schema_migration.families.base import WORLD_ROWS, Family, Params, World, ids, rebuild
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "ForeignKey"]

PAIRS = (
    ("customers", "orders", "customer_id"),
    ("authors", "books", "author_id"),
    ("teams", "players", "team_id"),
    ("projects", "tasks", "project_id"),
)
PLACEHOLDER = (0, "(unknown)", None)


class ForeignKey(Family):
    name = "add_fk_orphans"
    title = "add a foreign key and handle orphans"

    def draw(self, rng: random.Random) -> Params:
        parent, child, fk = pick(rng, PAIRS)
        return {"parent": parent, "child": child, "fk": fk, "orphans": pick(rng, ("null", "delete", "placeholder"))}

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        parent = Table(
            p["parent"],
            (
                Column("id", "INTEGER", primary_key=True),
                Column("name", "TEXT", notnull=True),
                Column("created", "TEXT"),
            ),
        )

        def child(fk: bool) -> Table:
            return Table(
                p["child"],
                (
                    Column("id", "INTEGER", primary_key=True),
                    Column(p["fk"], "INTEGER", references=(p["parent"], "id") if fk else None),
                    Column("title", "TEXT"),
                    Column("amount", "REAL"),
                ),
            )

        index = Index(f"idx_{p['child']}_{p['fk']}", p["child"], (p["fk"],))
        return Schema((parent, child(False))), Schema((parent, child(True)), (index,))

    def rules(self, p: Params) -> str:
        par, ch, fk = p["parent"], p["child"], p["fk"]
        action = {
            "null": f"set its `{fk}` to NULL (keep the row)",
            "delete": "delete the row",
            "placeholder": (
                f"point it at a placeholder parent: insert into `{par}` the row (id 0, name '(unknown)', "
                f"created NULL) and set `{fk}` = 0 (insert the placeholder even if no row is an orphan)"
            ),
        }[p["orphans"]]
        return (
            f"Make `{ch}`.`{fk}` a foreign key: `{fk}` INTEGER REFERENCES {par}(id), and add an "
            f"index on it. An orphan is a `{ch}` row whose `{fk}` is not NULL and matches no `{par}`.id; for each "
            f"orphan, {action}. Rows whose `{fk}` is NULL are not orphans and stay as they are. All other rows and "
            f"columns are unchanged. Afterwards PRAGMA foreign_key_check must report nothing."
        )

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        parents = [
            (i, f"{values.word(rng).title()} {i}", values.date(rng) if rng.random() < 0.8 else None)
            for i in ids(rng, max(2, n // 4), 10_000 if hard else 1, taken)
        ]
        pids = [r[0] for r in parents]
        top = pids[-1]
        child = []
        for j in ids(rng, n, 50_000 if hard else 1, taken):
            roll = rng.random()
            if roll < (0.2 if hard else 0.12):
                ref: int | None = pick(rng, (top + randrange(rng, 1, 1000), -randrange(rng, 1, 50), 0, 2**40))
            elif roll < (0.3 if hard else 0.18):
                ref = None
            else:
                ref = pick(rng, pids)
            amount = pick(rng, (None, 0.0, round(rng.uniform(1, 900), 2)))
            child.append((j, ref, pick(rng, (None, values.word(rng), "Ünïcode")), amount))
        return {p["parent"]: parents, p["child"]: child}

    def main_table(self, p: Params) -> str:
        return str(p["child"])

    def context(self, p: Params, rows: Rows) -> Any:
        known = {r[0] for r in rows[p["parent"]]}
        return known, max(known, default=0), {r[1] for r in rows[p["child"]]}

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["parent"]: ("name", "created"), p["child"]: ("title", "amount")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        par, ch = p["parent"], p["child"]

        def child(rng: random.Random, fresh: Fresh, ref: object, title: Any = "", amount: Any = "") -> Row:
            t = pick(rng, (values.word(rng), "Ünïcode")) if title == "" else title
            return (fresh(ch), ref, t, round(rng.uniform(1, 900), 2) if amount == "" else amount)

        def parent(rng: random.Random, fresh: Fresh) -> Row:
            i = fresh(par)
            return (i, f"{values.word(rng).title()} {i}", values.date(rng))

        def orphans(name: str, refs: Any, member: Any) -> ValueClass:
            return ValueClass(name, ch, lambda rng, k, fresh: {ch: [child(rng, fresh, refs(rng, k, fresh))]}, member)

        def with_parent(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            row = parent(rng, fresh)
            return {par: [row], ch: [child(rng, fresh, row[0])]}

        def junk(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            row = parent(rng, fresh)
            return {par: [row], ch: [child(rng, fresh, (f"{row[0]}abc", row[0] + 0.5, "n/a", f"{row[0]} x")[k % 4])]}

        def lonely(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
            return {par: [parent(rng, fresh)]}

        action = {"null": "set to NULL", "delete": "deleted", "placeholder": "pointed at placeholder 0"}[p["orphans"]]
        found = (
            orphans(
                "a foreign key above every parent id: an orphan",
                lambda rng, k, fresh: 10**7 + k,
                lambda r, c: isinstance(r[1], int) and r[1] > c[1],
            ),
            orphans(
                "a foreign key in a gap between parent ids: an orphan",
                lambda rng, k, fresh: fresh(par),
                lambda r, c: isinstance(r[1], int) and r[1] not in c[0] and 0 < r[1] < c[1],
            ),
            orphans(
                "a foreign key 0 or negative: an orphan",
                lambda rng, k, fresh: (0, -1, -50)[k % 3],
                lambda r, c: isinstance(r[1], int) and r[1] <= 0,
            ),
            orphans(
                "a huge foreign key: an orphan",
                lambda rng, k, fresh: (2**40, 2**63 - 1, 2**31)[k % 3],
                lambda r, c: isinstance(r[1], int) and r[1] >= 2**31,
            ),
            ValueClass(
                "a foreign key holding text or a fraction (a parent's id with junk): matches no id, an orphan",
                ch,
                junk,
                lambda r, c: r[1] is not None and not isinstance(r[1], int),
            ),
            orphans("a NULL foreign key: not an orphan, kept", lambda rng, k, fresh: None, lambda r, c: r[1] is None),
            ValueClass("a foreign key matching a parent: kept", ch, with_parent, lambda r, c: r[1] in c[0]),
        )
        others = (
            ValueClass(
                "a parent with no child rows (kept)",
                par,
                lambda rng, k, fresh: lonely(rng, k, fresh),
                lambda r, c: r[0] not in c[2],
            ),
            ValueClass(
                "title and amount NULL or 0 (kept)",
                ch,
                lambda rng, k, fresh: (
                    with_parent(rng, k, fresh) | {ch: [child(rng, fresh, None, None, (None, 0.0)[k % 2])]}
                ),
                lambda r, c: r[2] is None and (r[3] is None or r[3] == 0),
            ),
        )
        return (
            Rule(f"an orphan: a non-NULL {p['fk']} matching no {par}.id; each is {action}", found),
            Rule("all other rows and columns unchanged", others),
        )

    def worlds(self, p: Params) -> tuple[World, ...]:
        return (World("a database with no orphan at all", self._no_orphans),)

    def _no_orphans(self, p: Params, rng: random.Random, n: int) -> dict[str, list[Row]]:
        rows = self.sample(p, rng, max(n, WORLD_ROWS), True)
        known = [r[0] for r in rows[p["parent"]]]
        rows[p["child"]] = [
            (j, ref if ref is None or ref in known else pick(rng, known), t, a) for j, ref, t, a in rows[p["child"]]
        ]
        return rows

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        parents = list(rows[p["parent"]])
        known = {r[0] for r in parents}
        child = []
        for j, ref, title, amount in rows[p["child"]]:
            if ref is not None and ref not in known:
                if p["orphans"] == "delete":
                    continue
                ref = None if p["orphans"] == "null" else PLACEHOLDER[0]
            child.append((j, ref, title, amount))
        if p["orphans"] == "placeholder":
            parents = [PLACEHOLDER, *parents]
        return {p["parent"]: parents, p["child"]: child}

    def migration(self, p: Params) -> str:
        par, fk = p["parent"], p["fk"]
        _, target = self.schemas(p)
        known = f"{fk} IN (SELECT id FROM {par})"
        lines = []
        where = ""
        if p["orphans"] == "null":
            expr = f"CASE WHEN {known} THEN {fk} END"
        elif p["orphans"] == "delete":
            expr, where = fk, f"{fk} IS NULL OR {known}"
        else:
            lines.append(f"INSERT INTO {par} (id, name, created) VALUES (0, '(unknown)', NULL);")
            expr = f"CASE WHEN {fk} IS NULL OR {known} THEN {fk} ELSE 0 END"
        lines.append(rebuild(target.table(p["child"]), {fk: expr}, p["child"], target.indexes, where))
        return "\n".join(lines)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        return {
            p["parent"]: [(1, "Alpha", None), (2, "Bravo", None)],
            p["child"]: [
                (1, 1, "ok", 5.0),
                (2, 99, "orphan", 1.5),
                (3, None, "no parent", None),
                (4, -4, "orphan", 2.0),
            ],
        }


FAMILY = ForeignKey()
