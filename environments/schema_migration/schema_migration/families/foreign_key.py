"""Add a foreign key to a child table, handling orphans (set NULL, delete, or point at a placeholder parent)."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, rebuild
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "ForeignKey"]

PAIRS = (("customers", "orders", "customer_id"), ("authors", "books", "author_id"), ("teams", "players", "team_id"), ("projects", "tasks", "project_id"))
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
            (Column("id", "INTEGER", primary_key=True), Column("name", "TEXT", notnull=True), Column("created", "TEXT")),
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

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        parents = [
            (i, f"{values.word(rng).title()} {i}", values.date(rng) if rng.random() < 0.8 else None)
            for i in ids(rng, max(2, n // 4), 10_000 if hard else 1)
        ]
        pids = [r[0] for r in parents]
        top = pids[-1]
        child = []
        for j in ids(rng, n, 50_000 if hard else 1):
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
            p["child"]: [(1, 1, "ok", 5.0), (2, 99, "orphan", 1.5), (3, None, "no parent", None), (4, -4, "orphan", 2.0)],
        }


FAMILY = ForeignKey()
