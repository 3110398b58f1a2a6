"""Split one name column into two, at the first space ("First Last") or the first comma ("Last, First")."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass, space_classes, variants
from schema_migration.values import pick
from schema_migration.families.base import Family, Params, ids, rebuild, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table, replace_column

__all__ = ["FAMILY", "SplitColumn"]

ODD_SPACES = frozenset("\t\u00a0\u2003")
LOOKALIKE_COMMAS = frozenset("\uff0c\u3001;")


def _v(row: Row) -> str:
    return sql_trim(row[1] if isinstance(row[1], str) else None)


class SplitColumn(Family):
    name = "split_column"
    title = "split a column"

    def draw(self, rng: random.Random) -> Params:
        first, last = pick(rng, (("first_name", "last_name"), ("given_name", "family_name")))
        return {
            "table": pick(rng, ("contacts", "members", "authors", "patients")),
            "column": pick(rng, ("full_name", "name", "display_name")),
            "style": pick(rng, ("first_last", "last_comma_first")),
            "first": first,
            "last": last,
        }

    def _source(self, p: Params) -> Table:
        return Table(
            p["table"],
            (
                Column("id", "INTEGER", primary_key=True),
                Column(p["column"], "TEXT"),
                Column("email", "TEXT"),
                Column("created_at", "TEXT", notnull=True),
            ),
        )

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        source = self._source(p)
        target = replace_column(
            source, p["column"], Column(p["first"], "TEXT", notnull=True), Column(p["last"], "TEXT", notnull=True)
        )
        index = (Index(f"idx_{p['table']}_email", p["table"], ("email",)),)
        return Schema((source,), index), Schema((target,), index)

    def rules(self, p: Params) -> str:
        col, first, last = p["column"], p["first"], p["last"]
        head = (
            f"Replace column `{col}` of `{p['table']}` by two columns `{first}` and `{last}` (TEXT NOT NULL). "
            f"Let v be `{col}` with leading and trailing spaces (U+0020 only) removed; a NULL counts as ''. "
        )
        if p["style"] == "first_last":
            body = (
                f"If v contains a space, `{first}` is the text before the first space and `{last}` is the text "
                f"after the first space with leading and trailing spaces removed. Otherwise `{first}` = v and "
                f"`{last}` = ''."
            )
        else:
            body = (
                f"If v contains a comma, `{last}` is the text before the first comma and `{first}` is the text "
                f"after the first comma, each with leading and trailing spaces removed. Otherwise `{first}` = v "
                f"and `{last}` = ''."
            )
        tail = (
            " Only U+0020 counts as a space and only ',' as a comma: tabs, newlines, non-breaking and other"
            " Unicode spaces, and comma-like characters are ordinary characters. Keep every row; the other"
            " columns (`email` and `created_at`, exactly as they are) and the plain (not unique) index on email"
            " are unchanged."
        )
        return head + body + tail

    def _name(self, rng: random.Random, p: Params, hard: bool) -> str | None:
        odd = rng.random() < (0.5 if hard else 0.25)
        first, last = values.person(rng)
        if p["style"] == "first_last":
            plain = f"{first} {last}"
            awkward: tuple[str | None, ...] = (
                None, "", "   ", first, pick(rng, values.CJK), f"{first}  {last}", f"  {first} {last}  ",
                f"{first}\u00a0{last}", f"{first} {pick(rng, values.FIRST)} {last}", f"{first}\t{last}",
                f"  {first}", f"{first}  ",  # no inner space, spaces on one side only: v is trimmed on both
            )  # fmt: skip
            if hard:  # a tab or NBSP at an edge: trim() keeps it, so trimming more than spaces is wrong
                awkward += (f"\t{first} {last}", f"{first} {last}\u00a0")
        else:
            plain = f"{last}, {first}"
            awkward = (
                None, "", "  ", first, f"{last},{first}", f"  {last} ,  {first} ", f"{last}, {first}, Jr",
                f"{first} {last}", pick(rng, values.CJK), f", {first}",
                f"  {first}", f"{first}  ",  # no comma, spaces on one side only: v is trimmed on both
            )  # fmt: skip
            if hard:
                awkward += (f"\t{last}, {first}", f"{last}, {first}\u00a0")
        return pick(rng, awkward) if odd else values.pad(rng, plain, 0.1)

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out: list[Row] = []
        for i in ids(rng, n, 10_000 if hard else 1, taken):
            name = out[-1][1] if out and rng.random() < 0.05 else self._name(rng, p, hard)
            mail = None if rng.random() < 0.1 else values.email(rng, *values.person(rng))
            out.append((i, name, mail, values.timestamp(rng)))
        return {p["table"]: out}

    def context(self, p: Params, rows: Rows) -> Any:
        return Counter(r[2] for r in rows[p["table"]] if r[2] is not None)

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("email", "created_at")}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t, comma = p["table"], p["style"] != "first_last"

        def core(rng: random.Random) -> str:
            first, last = values.person(rng)
            return f"{last}, {first}" if comma else f"{first} {last}"

        def row(rng: random.Random, fresh: Fresh, name: str | None, mail: str | None = "", at: str = "") -> Row:
            email = values.email(rng, *values.person(rng)) if mail == "" else mail
            return (fresh(t), name, email, at or values.timestamp(rng))

        def words(rng: random.Random) -> dict[str, str]:
            a, b = values.person(rng)
            return {"a": a, "b": b, "c": pick(rng, values.FIRST)}

        def named(name: str, texts: tuple[str, ...], member: Any) -> ValueClass:
            return variants(
                name, t, texts, lambda rng, fresh, text: [row(rng, fresh, text)], lambda r, _c: member(_v(r)), words
            )

        def kept(name: str, make: Any, member: Any) -> ValueClass:
            return ValueClass(name, t, lambda rng, k, fresh: {t: make(rng, k, fresh)}, member)

        trim = space_classes(
            t, "name", lambda r: (r[1],), lambda rng, k, fresh, text: {t: [row(rng, fresh, text)]}, core
        )
        blank = (
            kept(
                "name: NULL (counts as '')", lambda rng, k, fresh: [row(rng, fresh, None)], lambda r, _c: r[1] is None
            ),
            kept("name: '' (empty)", lambda rng, k, fresh: [row(rng, fresh, "")], lambda r, _c: r[1] == ""),
        )
        split: tuple[ValueClass, ...]
        if not comma:
            split = (
                named("one space between two words", ("{a} {b}",), lambda v: v.count(" ") == 1 and not set(v) & ODD_SPACES),
                named("several words: split at the first space only", ("{a} {c} {b}", "{a} {b} Jr"), lambda v: v.count(" ") >= 2 and "  " not in v),
                named("a run of spaces after the first word: the rest is trimmed", ("{a}  {b}", "{a}   {c} {b}"), lambda v: "  " in v),
                named("a tab or no-break space between words and no U+0020: no split", ("{a}\t{b}", "{a}\u00a0{b}", "{a}\u2003{b}"), lambda v: " " not in v and bool(set(v) & ODD_SPACES)),
                named("a tab or no-break space next to the space: kept on its side", ("{a}\t {b}", "{a} \t{b}", "{a}\u00a0 {b}"), lambda v: " " in v and bool(set(v) & ODD_SPACES)),
                named("no space at all: first = v, last = ''", ("{a}", "李小龍", "{a}-{b}"), lambda v: v != "" and " " not in v and not set(v) & ODD_SPACES and "," not in v),
                named("a comma but no space: no split (a comma is an ordinary character here)", ("{b},{a}", "{b},{a},{c}"), lambda v: " " not in v and "," in v),
            )  # fmt: skip
        else:
            split = (
                named("one comma with spaces around it", ("{b} , {a}", "{b} ,{a}", "{b}, {a}"), lambda v: v.count(",") == 1 and (" ," in v or ", " in v) and v.strip(",") == v),
                named("one comma without spaces", ("{b},{a}",), lambda v: v.count(",") == 1 and " ," not in v and ", " not in v and v.strip(",") == v),
                named("runs of spaces inside a part: kept", ("{b}  {c}, {a}", "van  der {b},{a}  {c}"), lambda v: "," in v and "  " in v.replace(", ", ",").replace(" ,", ",")),
                named("several commas: split at the first only", ("{b}, {a}, Jr", "{b},{a},{c}"), lambda v: v.count(",") >= 2),
                named("a comma first: last = ''", (", {a}", ",{a}"), lambda v: v.startswith(",") and v.count(",") == 1 and v != ","),
                named("a comma last: first = ''", ("{b},", "{b} ,"), lambda v: v.endswith(",") and v.count(",") == 1 and v != ","),
                named("only a comma: both ''", (",", " , "), lambda v: v == ","),
                named("a tab or no-break space next to the comma: kept", ("{b}\t, {a}", "{b},\u00a0{a}", "{b} ,\t{a}"), lambda v: "," in v and bool(set(v) & ODD_SPACES)),
                named("a comma-like character that is not ',': no split", ("{b}\uff0c{a}", "{b}\u3001{a}", "{b};{a}"), lambda v: "," not in v and bool(set(v) & LOOKALIKE_COMMAS)),
                named("no comma but spaces: first = v, last = ''", ("{a} {b}", "{a} {c} {b}"), lambda v: "," not in v and " " in v and not set(v) & LOOKALIKE_COMMAS),
            )  # fmt: skip

        def mail(rng: random.Random) -> str:
            return values.email(rng, *values.person(rng))

        others = (
            kept("email: NULL (kept)", lambda rng, k, fresh: [row(rng, fresh, core(rng), None)], lambda r, _c: r[2] is None),
            kept("email: capitals or stray spaces (kept as they are)",
                 lambda rng, k, fresh: [row(rng, fresh, core(rng), mail(rng).title() if k % 2 else " " + mail(rng) + "\t")],
                 lambda r, _c: isinstance(r[2], str) and (r[2] != r[2].lower() or r[2] != r[2].strip())),
            kept("email: shared by several rows (the index is not unique)",
                 lambda rng, k, fresh: [row(rng, fresh, core(rng), m) for m in [mail(rng)] * 2],
                 lambda r, c: r[2] is not None and c[r[2]] > 1),
            kept("created_at: not a plain timestamp (kept as it is)",
                 lambda rng, k, fresh: [row(rng, fresh, core(rng), at=("soon", "2024-02-30 10:00:00", "2024-01-01", " 2024-01-01 00:00:00")[k % 4])],
                 lambda r, _c: len(r[3]) != 19 or r[3][4] != "-"),
        )  # fmt: skip
        sep = "comma" if comma else "space"
        return (
            Rule("v = the name with U+0020 (only) removed at both ends; NULL counts as ''", trim + blank),
            Rule(f"split v at the first {sep} (U+0020 / ',' only); otherwise first = v, last = ''", split),
            Rule("keep every row; email, created_at and the plain index on email are unchanged", others),
        )

    def split(self, p: Params, value: str | None) -> tuple[str, str]:
        v = sql_trim(value)
        if p["style"] == "first_last":
            if " " not in v:
                return v, ""
            head, _, rest = v.partition(" ")
            return head, sql_trim(rest)
        if "," not in v:
            return v, ""
        head, _, rest = v.partition(",")
        return sql_trim(rest), sql_trim(head)

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        return {p["table"]: [(i, *self.split(p, name), mail, at) for i, name, mail, at in rows[p["table"]]]}

    def migration(self, p: Params) -> str:
        sep = "' '" if p["style"] == "first_last" else "','"
        at = f"instr(v, {sep})"
        before = f"substr(v, 1, {at} - 1)"
        after = f"trim(substr(v, {at} + 1))"
        if p["style"] == "first_last":
            first, last = f"CASE WHEN {at} > 0 THEN {before} ELSE v END", f"CASE WHEN {at} > 0 THEN {after} ELSE '' END"
        else:
            first, last = (
                f"CASE WHEN {at} > 0 THEN {after} ELSE v END",
                f"CASE WHEN {at} > 0 THEN trim({before}) ELSE '' END",
            )
        _, target = self.schemas(p)
        return rebuild(
            target.tables[0],
            {p["first"]: first, p["last"]: last},
            f"(SELECT *, trim(coalesce({p['column']}, '')) AS v FROM {p['table']}) AS src",
            target.indexes,
        )

    def examples(self, p: Params) -> dict[str, list[Row]]:
        names = (
            ["  Ann Lee ", "Mary-Kate van der Berg", "José  García", "Cher", None, "李小龍"]
            if p["style"] == "first_last"
            else ["Lee, Ann", " van der Berg ,Mary-Kate ", "García, José, Jr", "Cher", None, "李小龍"]
        )
        return {p["table"]: [(k + 1, name, None, "2024-01-01 00:00:00") for k, name in enumerate(names)]}


FAMILY = SplitColumn()
