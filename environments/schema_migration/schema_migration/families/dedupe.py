"""Add UNIQUE to a normalised email column: dedupe, keeping one row, and re-point child rows."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from schema_migration import values
from schema_migration.cases import KEPT_SPACES, Fresh, Rule, ValueClass, space_classes
from schema_migration.values import pick
from schema_migration.families.base import Family, Params, ascii_lower, ids, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "Dedupe"]


@dataclass(frozen=True)
class Groups:
    """Class membership context: parent ids by normalised value, the kept id of each, the raw values."""

    ids: dict[str, list[int]]
    kept: dict[str, int]
    raw: dict[int, str | None]
    norms: frozenset[str]


PARENTS = {
    "users": ("sessions", "user_id"),
    "subscribers": ("deliveries_log", "subscriber_id"),
    "accounts": ("posts", "account_id"),
}


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
            "row is deleted). Rows with a NULL normalised value are all kept. Other columns are unchanged. Only "
            "U+0020 is removed and only A-Z are lower-cased: values that differ in tabs, newlines or non-breaking "
            "spaces at their ends, or in non-ASCII capitals ('É' and 'é'), are not duplicates."
        )

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        parent: list[Row] = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
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
            for j in ids(rng, max(1, n // 2), 50_000 if hard else 1, taken)
        ]
        return {p["table"]: parent, p["child"]: child}

    def context(self, p: Params, rows: Rows) -> Any:
        groups: dict[str, list[int]] = {}
        raw: dict[int, str | None] = {}
        for i, mail, _, _ in rows[p["table"]]:
            raw[i] = mail
            if (key := self.norm(mail)) is not None:
                groups.setdefault(key, []).append(i)
        choose = min if p["keep"] == "lowest" else max
        return Groups(groups, {k: choose(v) for k, v in groups.items()}, raw, frozenset(groups))

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("display_name", "joined_on"), p["child"]: ("note",)}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t, c = p["table"], p["child"]

        def mail(rng: random.Random) -> str:
            return values.email(rng, *values.person(rng))

        def group(rng: random.Random, fresh: Fresh, mails: list[str | None], children: int = 1) -> dict[str, list[Row]]:
            parents = [(fresh(t), m, " ".join(values.person(rng)), values.date(rng)) for m in mails]
            kids = [(fresh(c), r[0], values.word(rng)) for r in parents for _ in range(children)]
            return {t: parents, c: kids}

        def cls(name: str, table: str, mails: Any, member: Any, children: int = 1) -> ValueClass:
            return ValueClass(name, table, lambda rng, k, fresh: group(rng, fresh, mails(rng, k), children), member)

        def size(r: Row, g: Groups) -> int:
            key = self.norm(r[1])
            return 0 if key is None else len(g.ids[key])

        def raws(r: Row, g: Groups) -> set[str]:
            key = self.norm(r[1])
            return set() if key is None else {str(g.raw[i]).strip(" ") for i in g.ids[key]}

        odd = KEPT_SPACES
        trim = space_classes(
            t, "the email", lambda r: (r[1],), lambda rng, k, fresh, text: group(rng, fresh, [text]), mail, inner=False
        )
        nulls = (
            cls("NULL, '' and only U+0020: stored NULL, all kept, none a duplicate", t, lambda rng, k: [None, "", " " * (1 + k % 3)],
                lambda r, g: self.norm(r[1]) is None),
        )  # fmt: skip
        dupes = (
            cls("twins differing only in U+0020 at the ends: duplicates", t, lambda rng, k: (lambda m: [m, "  " + m, m + " "][: 2 + k % 2])(mail(rng)),
                lambda r, g: size(r, g) > 1 and len({str(g.raw[i]) for i in g.ids[self.norm(r[1]) or ""]}) > len(raws(r, g))),
            cls("twins differing only in ASCII capitals: duplicates", t, lambda rng, k: (lambda m: [m.upper(), m.title(), m][k % 3:][:2] if k % 3 < 2 else [m, m.upper()])(mail(rng)),
                lambda r, g: size(r, g) > 1 and len(raws(r, g)) > 1),
            cls("groups of three or more", t, lambda rng, k: (lambda m: [m, m.upper(), " " + m, m.title()][: 3 + k % 2])(mail(rng)), lambda r, g: size(r, g) >= 3),
            cls("twins differing in a tab, newline or no-break space at an end: not duplicates", t,
                lambda rng, k: (lambda m: [m, m + odd[k % len(odd)]] if k % 2 else [odd[k % len(odd)] + m, m.upper()])(mail(rng)),
                lambda r, g: (key := self.norm(r[1])) is not None and key != key.strip() and key.strip() in g.norms),
            cls("twins of only tabs or other non-U+0020 whitespace: duplicates of each other", t,
                lambda rng, k: [odd[k % len(odd)], " " + odd[k % len(odd)] + " "],
                lambda r, g: (key := self.norm(r[1])) is not None and key.strip() == "" and size(r, g) > 1),
            cls("twins differing in a run of inner spaces: not duplicates", t,
                lambda rng, k: (lambda m: [m.replace("@", "  x@"), m.replace("@", " x@")])(mail(rng)),
                lambda r, g: isinstance(r[1], str) and " x@" in r[1]),
            cls("twins differing in non-ASCII capitals: not duplicates", t, lambda rng, k: [f"JOSÉ.{k}@example.com", f"josé.{k}@example.com", f"Ærø{k}@example.org", f"ærø{k}@EXAMPLE.org"][(k % 2) * 2 : (k % 2) * 2 + 2],
                lambda r, g: (key := self.norm(r[1])) is not None and not key.isascii() and any(k2 != key and k2.lower() == key.lower() for k2 in (key.lower(), key.upper()) if k2 in g.norms)),
        )  # fmt: skip

        def parent_of(r: Row, g: Groups) -> tuple[str | None, int]:
            return self.norm(g.raw.get(r[1])), r[1]

        children = (
            cls("children of a deleted duplicate: re-pointed at the kept row", c, lambda rng, k: (lambda m: [m, m.upper()])(mail(rng)),
                lambda r, g: (key := parent_of(r, g)[0]) is not None and g.kept[key] != r[1], children=2),
            cls("children of the kept row or of a row without duplicates: unchanged", c, lambda rng, k: [mail(rng)],
                lambda r, g: (key := parent_of(r, g)[0]) is not None and g.kept[key] == r[1]),
            cls("children of a row whose email is NULL or blank: unchanged", c, lambda rng, k: [(None, "", "  ")[k % 3]],
                lambda r, g: r[1] in g.raw and parent_of(r, g)[0] is None),
        )  # fmt: skip
        which = "lowest" if p["keep"] == "lowest" else "highest"
        return (
            Rule("normalise: U+0020 (only) removed at both ends, then A-Z lower-cased", trim),
            Rule("NULL or '' after normalising: stored NULL; such rows are all kept", nulls),
            Rule(f"rows sharing a normalised value are duplicates: keep the {which} id, delete the others", dupes),
            Rule("every child of a deleted row points at the kept row; no child is deleted", children),
        )

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
