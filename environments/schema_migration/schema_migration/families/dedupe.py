"""Add UNIQUE to a normalised email column: dedupe, keeping one row, and re-point child rows."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick
from schema_migration.families.base import Family, Params, ascii_lower, ids, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "Dedupe"]

PARENTS = {"users": ("sessions", "user_id"), "subscribers": ("deliveries_log", "subscriber_id"), "accounts": ("posts", "account_id")}


class Dedupe(Family):
    name = "unique_dedupe"
    title = "add UNIQUE with a dedupe rule"

    def draw(self, rng: random.Random) -> Params:
        table = pick(rng, sorted(PARENTS))
        child, fk = PARENTS[table]
        column = pick(rng, ("email", "login_email", "contact_email"))
        return {
            "table": table,
            "column": column,
            "child": child,
            "fk": fk,
            "keep": pick(rng, ("lowest", "highest")),
            "index": f"ux_{table}_{column}",
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t, c = p["table"], p["child"]
        parent = Table(
            t,
            (
                Column("id", "INTEGER", primary_key=True),
                Column(p["column"], "TEXT"),
                Column("display_name", "TEXT"),
                Column("joined_on", "TEXT"),
            ),
        )
        child = Table(
            c,
            (
                Column("id", "INTEGER", primary_key=True),
                Column(p["fk"], "INTEGER", notnull=True, references=(t, "id")),
                Column("note", "TEXT"),
            ),
        )
        child_index = Index(f"idx_{c}_{p['fk']}", c, (p["fk"],))
        unique = Index(p["index"], t, (p["column"],), unique=True)
        return Schema((parent, child), (child_index,)), Schema((parent, child), (child_index, unique))

    def rules(self, p: Params) -> str:
        t, col, c, fk = p["table"], p["column"], p["child"], p["fk"]
        which = "lowest" if p["keep"] == "lowest" else "highest"
        return (
            f"Make `{t}`.`{col}` unique (a UNIQUE constraint or a unique index on that one column; the target "
            f"below uses index {p['index']}). First normalise: the stored value becomes the old value with leading "
            "and trailing spaces (U+0020 only) removed and then lower-cased the way SQLite's lower() does it "
            f"(only ASCII A-Z change); NULL or a value that becomes '' is stored as NULL. Rows of `{t}` sharing a "
            f"non-NULL normalised value are duplicates: keep the one with the {which} id and delete the others. "
            f"Every row of `{c}` whose `{fk}` pointed at a deleted row must point at the kept row instead (no `{c}` "
            "row is deleted). Rows with a NULL normalised value are all kept. Other columns are unchanged."
        )

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        parent: list[Row] = []
        for i in ids(rng, n, 10_000 if hard else 1):
            first, last = values.person(rng)
            if parent and rng.random() < (0.3 if hard else 0.2):
                base = (pick(rng, parent)[1] or "someone@example.com").strip()
                mail = pick(rng, (base.upper(), base.lower(), base, base.title()))
            elif rng.random() < (0.12 if hard else 0.06):
                mail = pick(rng, (None, "", "  ", "JOSÉ@example.com", "josé@example.com"))
            else:
                mail = values.email(rng, first, last)
            mail = values.pad(rng, mail, 0.25 if hard else 0.1) if mail else mail
            parent.append((i, mail, f"{first} {last}", values.date(rng)))
        parent_ids = [r[0] for r in parent]
        child = [
            (j, pick(rng, parent_ids), pick(rng, (None, values.word(rng), "")))
            for j in ids(rng, max(1, n // 2), 50_000 if hard else 1)
        ]
        return {p["table"]: parent, p["child"]: child}

    def norm(self, value: str | None) -> str | None:
        return ascii_lower(sql_trim(value)) or None

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        keeper: dict[str, int] = {}
        pick = min if p["keep"] == "lowest" else max
        for i, mail, _, _ in rows[p["table"]]:
            key = self.norm(mail)
            if key is not None:
                keeper[key] = pick(keeper.get(key, i), i)
        new_id: dict[int, int] = {}
        parent = []
        for i, mail, name, joined in rows[p["table"]]:
            key = self.norm(mail)
            new_id[i] = i if key is None else keeper[key]
            if new_id[i] == i:
                parent.append((i, key, name, joined))
        child = [(j, new_id.get(ref, ref), note) for j, ref, note in rows[p["child"]]]
        return {p["table"]: parent, p["child"]: child}

    def migration(self, p: Params) -> str:
        t, col, c, fk = p["table"], p["column"], p["child"], p["fk"]
        pick = "min" if p["keep"] == "lowest" else "max"
        _, target = self.schemas(p)
        return "\n".join(
            (
                "CREATE TEMP TABLE dedupe_map (old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);",
                f"INSERT INTO dedupe_map (old_id, new_id)\n  SELECT id, {pick}(id) OVER (PARTITION BY lower(trim({col})))"
                f"\n  FROM {t} WHERE trim(coalesce({col}, '')) <> '';",
                f"UPDATE {c} SET {fk} = (SELECT new_id FROM dedupe_map WHERE old_id = {c}.{fk})"
                f"\n  WHERE {fk} IN (SELECT old_id FROM dedupe_map WHERE old_id <> new_id);",
                f"DELETE FROM {t} WHERE id IN (SELECT old_id FROM dedupe_map WHERE old_id <> new_id);",
                f"UPDATE {t} SET {col} = nullif(lower(trim({col})), '');",
                target.indexes[-1].ddl(),
                "DROP TABLE dedupe_map;",
            )
        )

    def examples(self, p: Params) -> dict[str, list[Row]]:
        mails = [" Ann.Lee@Example.com", "ann.lee@example.com ", "JOSÉ@example.com", "josé@example.com", "  ", None]
        parent = [(k + 1, m, f"Person {k + 1}", "2024-01-01") for k, m in enumerate(mails)]
        child = [(1, 2, "points at id 2"), (2, 1, "points at id 1")]
        return {p["table"]: parent, p["child"]: child}


FAMILY = Dedupe()
