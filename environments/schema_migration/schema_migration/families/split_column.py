"""Split one name column into two, at the first space ("First Last") or the first comma ("Last, First")."""

from __future__ import annotations

import random

from schema_migration import values
from schema_migration.values import pick
from schema_migration.families.base import Family, Params, ids, rebuild, sql_trim
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table, replace_column

__all__ = ["FAMILY", "SplitColumn"]


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
            " Only U+0020 counts as a space: tabs and non-breaking spaces are ordinary characters. "
            "Keep every row; the other columns and the index on email are unchanged."
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

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out: list[Row] = []
        for i in ids(rng, n, 10_000 if hard else 1):
            name = out[-1][1] if out and rng.random() < 0.05 else self._name(rng, p, hard)
            mail = None if rng.random() < 0.1 else values.email(rng, *values.person(rng))
            out.append((i, name, mail, values.timestamp(rng)))
        return {p["table"]: out}

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
            first, last = f"CASE WHEN {at} > 0 THEN {after} ELSE v END", f"CASE WHEN {at} > 0 THEN trim({before}) ELSE '' END"
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
