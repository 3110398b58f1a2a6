"""The classic wrong migrations, per family: what an honest agent plausibly submits when it misses one rule.

Each is a pure function of the family's knobs (the prompt's spec block), written as SQL here rather
than as family hooks. Where a mistake has no literal form in a family, the entry is the closest
analogous mistake, or the one that family invites (the README's table lists the mapping):

| mistake        | what it is                                                        |
|----------------|-------------------------------------------------------------------|
| schema_only    | target schema right, data copied without its cleaning rule        |
| values_only    | data fixed in place, the new constraint (or other schema part) not |
| no_trim        | the values' U+0020 trimming forgotten (or trimming where forbidden) |
| truncate       | truncation instead of rounding (or a similar lossy conversion)    |
| inner_join     | an inner join or filter that drops the rows holding NULLs         |
| no_constraint  | a stated FK, CHECK, UNIQUE or index left out                      |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from schema_migration.families import BY_NAME, Params
from schema_migration.families import rename_view
from schema_migration.families.base import literal, rebuild
from schema_migration.schema import Column, Index, Table

MISTAKES = ("schema_only", "values_only", "no_trim", "truncate", "inner_join", "no_constraint")


def _target(family: str, p: Params, name: str | None = None) -> tuple[Table, tuple[Index, ...]]:
    """A touched table of the family's target schema (default: the last) and its indexes."""
    target = BY_NAME[family].schemas(p)[1]
    table = target.table(name) if name else target.tables[-1]
    return table, target.indexes_of(table.name)


def _loosen(table: Table, **columns: dict[str, Any]) -> Table:
    """`table` with the named columns' attributes replaced (e.g. notnull=False, references=None)."""
    return replace(table, columns=tuple(replace(c, **columns.get(c.name, {})) for c in table.columns))


def _in_place(table: str, added: list[Column], sets: dict[str, str], dropped: list[str], before: str = "") -> str:
    """ALTER TABLE ADD COLUMN each of `added` (as declared), UPDATE with `sets`, DROP COLUMN `dropped`."""
    lines = [before] if before else []
    lines += [f"ALTER TABLE {table} ADD COLUMN {c.ddl()};" for c in added]
    if sets:
        lines.append(f"UPDATE {table} SET " + ", ".join(f"{k} = {v}" for k, v in sets.items()) + ";")
    lines += [f"ALTER TABLE {table} DROP COLUMN {c};" for c in dropped]
    return "\n".join(lines)


# -- split_column ---------------------------------------------------------------------------------


def _split_exprs(
    p: Params, v: str, trim: Callable[[str], str] = lambda e: f"trim({e})", words: int = 0
) -> tuple[str, str]:
    """(first, last) SQL for the trimmed name `v`; `words` > 0 keeps only the next word of the rest."""
    sep = "' '" if p["style"] == "first_last" else "','"
    at = f"instr({v}, {sep})"
    before, after = f"substr({v}, 1, {at} - 1)", trim(f"substr({v}, {at} + 1)")
    if words:
        after = f"CASE WHEN instr({after}, {sep}) > 0 THEN {trim(f'substr({after}, 1, instr({after}, {sep}) - 1)')} ELSE {after} END"
    if p["style"] == "first_last":
        return f"CASE WHEN {at} > 0 THEN {before} ELSE {v} END", f"CASE WHEN {at} > 0 THEN {after} ELSE '' END"
    return f"CASE WHEN {at} > 0 THEN {after} ELSE {v} END", f"CASE WHEN {at} > 0 THEN {trim(before)} ELSE '' END"


def _split(p: Params) -> dict[str, str]:
    fam, t, col, first, last = "split_column", p["table"], p["column"], p["first"], p["last"]
    table, indexes = _target(fam, p)
    trimmed = f"trim(coalesce({col}, ''))"

    def rebuilt(v: str, where: str = "", words: int = 0, idx: tuple[Index, ...] = indexes) -> str:
        f, la = _split_exprs(p, "v", words=words)
        return rebuild(table, {first: f, last: la}, f"(SELECT *, {v} AS v FROM {t}) AS src", idx, where)

    f, la = _split_exprs(p, trimmed)
    return {
        "schema_only": rebuild(table, {first: f"coalesce({col}, '')", last: "''"}, t, indexes),
        "values_only": _in_place(t, [Column(first, "TEXT"), Column(last, "TEXT")], {first: f, last: la}, [col]),
        "no_trim": rebuilt(f"coalesce({col}, '')"),
        "truncate": rebuilt(trimmed, words=1),
        "inner_join": rebuilt(trimmed, where=f"{col} IS NOT NULL AND trim({col}) <> ''"),
        "no_constraint": rebuilt(trimmed, idx=()),
    }


# -- merge_columns --------------------------------------------------------------------------------


def _merged(p: Params, trim: bool = True, skip: bool = True, offset: int = 0) -> str:
    sep = literal(p["sep"])
    part = (lambda x: f"trim({x})") if trim else (lambda x: x)
    if skip:
        pieces = " || ".join(f"coalesce({sep} || nullif({part(x)}, ''), '')" for x in p["parts"])
        joined = f"substr({pieces}, {offset or len(p['sep']) + 1})"
        return f"nullif({joined}, '')" if p["empty"] == "null" else joined
    return f" || {sep} || ".join(f"coalesce({x}, '')" for x in p["parts"])


def _merge(p: Params) -> dict[str, str]:
    t, target = p["table"], p["target"]
    table, indexes = _target("merge_columns", p)
    column = table.column(target)
    everything_null = f"coalesce({', '.join(p['parts'])}) IS NOT NULL"
    # A nullable target makes the in-place ADD COLUMN right; the mistake there is keeping the parts.
    dropped = [] if p["empty"] == "null" else p["parts"]
    return {
        "schema_only": rebuild(table, {target: _merged(p, trim=False, skip=False)}, t, indexes),
        "values_only": _in_place(t, [replace(column, notnull=False)], {target: _merged(p)}, dropped),
        "no_trim": rebuild(table, {target: _merged(p, trim=False)}, t, indexes),
        "truncate": rebuild(table, {target: _merged(p, offset=2)}, t, indexes),
        "inner_join": rebuild(table, {target: _merged(p)}, t, indexes, everything_null),
        "no_constraint": rebuild(table, {target: _merged(p)}, t),
    }


# -- change_type_cents ----------------------------------------------------------------------------


def _cents(p: Params) -> dict[str, str]:
    t, col, target = p["table"], p["column"], p["target"]
    table, _ = _target("change_type_cents", p)
    thousands = "," if p["format"] == "us" else "."
    empty = "0" if p["empty"] == "zero" else "NULL"

    def clean(spaces: bool = True) -> str:
        text = f"replace({col}, ' ', '')" if spaces else col
        text = f"replace(replace({text}, {literal(p['symbol'])}, ''), {literal(thousands)}, '')"
        return f"replace({text}, ',', '.')" if p["format"] == "eu" else text

    def value(c: str, rounded: bool = True) -> str:
        times = f"CAST({c} AS REAL) * 100"
        number = f"CAST(round({times}) AS INTEGER)" if rounded else f"CAST({times} AS INTEGER)"
        return f"CASE WHEN {c} IS NULL OR {c} = '' OR {c} GLOB '*[^0-9.-]*' THEN {empty} ELSE {number} END"

    def rebuilt(c: str, rounded: bool = True, where: str = "", tab: Table = table) -> str:
        return rebuild(tab, {target: value("clean", rounded)}, f"(SELECT *, {c} AS clean FROM {t}) AS src", (), where)

    raw = f"CAST(round(CAST({col} AS REAL) * 100) AS INTEGER)"
    nullable = p["empty"] == "null"
    return {
        "schema_only": rebuild(table, {target: raw if nullable else f"coalesce({raw}, 0)"}, t),
        "values_only": _in_place(t, [Column(target, "INTEGER")], {target: value(clean())}, [] if nullable else [col]),
        "no_trim": rebuilt(clean(spaces=False)),
        "truncate": rebuilt(clean(), rounded=False),
        "inner_join": rebuilt(clean(), where="clean <> '' AND clean NOT GLOB '*[^0-9.-]*'"),
        "no_constraint": rebuilt(clean(), tab=_loosen(table, sku={"unique": False})),
    }


# -- normalise_lookup -----------------------------------------------------------------------------


def _lookup(p: Params) -> dict[str, str]:
    fam, t, col, lk, fk = "normalise_lookup", p["table"], p["column"], p["lookup"], p["fk"]
    table, indexes = _target(fam, p, t)
    lookup, _ = _target(fam, p, lk)

    def key(expr: str, trim: bool = True) -> str:
        k = f"trim({expr})" if trim else expr
        return f"lower({k})" if p["case"] == "lower" else k

    def fill(k: str, order: str = "k") -> str:
        return (
            f"INSERT INTO {lk} (id, name)\n  SELECT row_number() OVER (ORDER BY {order}), k\n"
            f"  FROM (SELECT {k} AS k, min(id) AS first FROM {t} GROUP BY k) WHERE k <> '';"
        )

    def ref(k: str) -> str:
        return f"(SELECT {lk}.id FROM {lk} WHERE {lk}.name = {k})"

    def migration(k: str = key(col), order: str = "k", tab: Table = table, lookup_table: Table = lookup) -> str:
        qualified = k.replace(col, f"{t}.{col}")
        return "\n".join((lookup_table.ddl(), fill(k, order), rebuild(tab, {fk: ref(qualified)}, t, indexes)))

    joined = "\n".join(
        (
            lookup.ddl(),
            fill(key(col)),
            rebuild(
                table, {"id": f"{t}.id", fk: f"{lk}.id"}, f"{t} JOIN {lk} ON {lk}.name = {key(t + '.' + col)}", indexes
            ),
        )
    )
    bare = _loosen(lookup, name={"notnull": False, "unique": False})
    in_place = _in_place(
        t, [Column(fk, "INTEGER")], {fk: ref(key(f"{t}.{col}"))}, [col],
        before=f"{bare.ddl()}\n{fill(key(col))}\nDROP INDEX idx_{t}_{col};",
    ) + "\n" + "\n".join(i.ddl() for i in indexes)  # fmt: skip
    return {
        "schema_only": migration(k=col),
        "values_only": in_place,
        "no_trim": migration(k=key(col, trim=False)),
        "truncate": migration(order="first"),
        "inner_join": joined,
        "no_constraint": migration(tab=_loosen(table, **{fk: {"references": None}})),
    }


# -- not_null_backfill ----------------------------------------------------------------------------


def _backfill(p: Params) -> dict[str, str]:
    t, col = p["table"], p["column"]
    table, indexes = _target("not_null_backfill", p)
    fallback = "created_at" if p["mode"] == "column" else literal(p["constant"])

    def expr(value: str) -> str:
        return f"CASE WHEN trim(coalesce({col}, '')) = '' THEN {fallback} ELSE {value} END"

    return {
        "schema_only": rebuild(table, {col: f"coalesce({col}, {fallback})"}, t, indexes),
        "values_only": f"UPDATE {t} SET {col} = {expr(f'trim({col})')};",
        "no_trim": rebuild(table, {col: expr(col)}, t, indexes),
        "truncate": rebuild(table, {col: expr(f"substr(trim({col}), 1, 10)")}, t, indexes),
        "inner_join": rebuild(table, {col: f"trim({col})"}, t, indexes, f"trim(coalesce({col}, '')) <> ''"),
        "no_constraint": rebuild(table, {col: expr(f"trim({col})")}, t),
    }


# -- unique_dedupe --------------------------------------------------------------------------------


def _dedupe(p: Params) -> dict[str, str]:
    t, col, c, fk = p["table"], p["column"], p["child"], p["fk"]
    child, child_indexes = _target("unique_dedupe", p, c)
    unique = f"CREATE UNIQUE INDEX {p['index']} ON {t}({col});"

    def migration(
        norm: str, keep: str = "min" if p["keep"] == "lowest" else "max", repoint: str = "update", index: bool = True
    ) -> str:
        lines = [
            "CREATE TEMP TABLE dedupe_map (old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);",
            f"INSERT INTO dedupe_map (old_id, new_id)\n  SELECT id, {keep}(id) OVER (PARTITION BY {norm})\n  FROM {t} WHERE {norm} IS NOT NULL;",
        ]
        if repoint == "update":
            lines.append(
                f"UPDATE {c} SET {fk} = (SELECT new_id FROM dedupe_map WHERE old_id = {c}.{fk})"
                f"\n  WHERE {fk} IN (SELECT old_id FROM dedupe_map WHERE old_id <> new_id);"
            )
        elif repoint == "join":
            lines.append(
                rebuild(
                    child,
                    {fk: "dedupe_map.new_id", "id": f"{c}.id"},
                    f"{c} JOIN dedupe_map ON dedupe_map.old_id = {c}.{fk}",
                    child_indexes,
                )
            )
        lines += [
            f"DELETE FROM {t} WHERE id IN (SELECT old_id FROM dedupe_map WHERE old_id <> new_id);",
            f"UPDATE {t} SET {col} = {norm};",
        ]
        return "\n".join(lines + ([unique] if index else []) + ["DROP TABLE dedupe_map;"])

    norm = f"nullif(lower(trim({col})), '')"
    return {
        "schema_only": migration(col),
        "values_only": migration(norm, index=False),
        "no_trim": migration(f"nullif(lower({col}), '')"),
        "truncate": migration(norm, keep="max" if p["keep"] == "lowest" else "min"),
        "inner_join": migration(norm, repoint="join"),
        "no_constraint": migration(norm, repoint="none"),
    }


# -- check_repair ---------------------------------------------------------------------------------


def _check(p: Params) -> dict[str, str]:
    t, q, r = p["table"], p["qty"], p["rate"]
    table, indexes = _target("check_repair", p)
    qty = f"max({q}, 0)" if p["cap"] is None else f"min(max({q}, 0), {p['cap']})"
    percent = f"WHEN {r} > 1 AND {r} <= 100 THEN {r} / 100.0 " if p["percent"] else ""
    rate = f"CASE WHEN {r} IS NULL THEN NULL WHEN {r} < 0 THEN 0.0 {percent}WHEN {r} > 1 THEN 1.0 ELSE {r} END"
    names = ", ".join(table.column_names)
    ignore = "\n".join(
        (
            replace(table, name=f"{t}__new").ddl(),
            f"INSERT OR IGNORE INTO {t}__new ({names}) SELECT {names} FROM {t};",
            f"DROP TABLE {t};",
            f"ALTER TABLE {t}__new RENAME TO {t};",
            *(i.ddl() for i in indexes),
        )
    )
    return {
        "schema_only": ignore,
        "values_only": f"UPDATE {t} SET {q} = {qty}, {r} = {rate};",
        "no_trim": rebuild(table, {q: qty, r: f"coalesce({rate}, 0.0)"}, t, indexes),
        "truncate": rebuild(table, {q: qty, r: f"CAST(({rate}) * 100 AS INTEGER) / 100.0"}, t, indexes),
        "inner_join": rebuild(table, {q: qty, r: rate}, t, indexes, f"{r} IS NOT NULL"),
        "no_constraint": rebuild(_loosen(table, **{r: {"check": None}}), {q: qty, r: rate}, t, indexes),
    }


# -- extract_json ---------------------------------------------------------------------------------


def _json(p: Params) -> dict[str, str]:
    t, fields = p["table"], p["fields"]
    table, indexes = _target("extract_json", p)
    kinds = {kind for _, _, kind in fields}

    def value(path: str, kind: str, trim: bool = True, lossy: bool = False) -> str:
        got, typ = f"json_extract(payload, '{path}')", f"json_type(payload, '{path}')"
        clip = (lambda e: f"trim({e})") if trim else (lambda e: e)
        if kind == "TEXT":
            if lossy and kinds == {"TEXT"}:  # nothing numeric to truncate: numbers taken as text
                return f"CASE WHEN {typ} IN ('text', 'integer', 'real') THEN CAST({got} AS TEXT) END"
            # Without an INTEGER field to leave untrimmed, the mistake is trimming text the rule keeps.
            text = got if trim or "INTEGER" in kinds else f"trim({got})"
            return f"CASE WHEN {typ} = 'text' THEN {text} END"
        if kind == "INTEGER":
            real = f" WHEN 'real' THEN CAST({got} AS INTEGER)" if lossy else ""
            return (
                f"CASE {typ} WHEN 'integer' THEN {got}{real} WHEN 'text' THEN CASE WHEN {clip(got)} <> '' "
                f"AND {clip(got)} NOT GLOB '*[^0-9]*' THEN CAST({clip(got)} AS INTEGER) END END"
            )
        if lossy:
            return f"CASE WHEN {typ} IN ('integer', 'real') THEN CAST({got} AS INTEGER) END"
        return f"CASE WHEN {typ} IN ('integer', 'real') THEN CAST({got} AS REAL) END"

    def exprs(**how: bool) -> dict[str, str]:
        return {
            name: f"CASE WHEN payload_kind = 'object' THEN {value(path, kind, **how)} END"
            for name, path, kind in fields
        }

    source = f"(SELECT *, CASE WHEN json_valid(payload) THEN json_type(payload) END AS payload_kind FROM {t}) AS src"
    raw = {name: f"CASE WHEN json_valid(payload) THEN json_extract(payload, '{path}') END" for name, path, _ in fields}
    correct = exprs()
    checked = "CASE WHEN json_valid(payload) AND json_type(payload) = 'object' THEN {} END"
    untyped = "\n".join(
        [f"ALTER TABLE {t} ADD COLUMN {name};" for name, _, _ in fields]
        + [
            f"UPDATE {t} SET "
            + ", ".join(f"{name} = {checked.format(value(path, kind))}" for name, path, kind in fields)
            + ";"
        ]
    )
    if indexes:
        missing = rebuild(table, correct, source)
    elif not p["keep_payload"]:
        missing = rebuild(
            replace(table, columns=(*table.columns[:2], Column("payload", "TEXT"), *table.columns[2:])), correct, source
        )
    else:
        missing = rebuild(
            replace(table, columns=tuple(c for c in table.columns if c.name != "payload")), correct, source
        )
    return {
        "schema_only": rebuild(table, raw, t, indexes),
        "values_only": untyped,
        "no_trim": rebuild(table, exprs(trim=False), source, indexes),
        "truncate": rebuild(table, exprs(lossy=True), source, indexes),
        "inner_join": rebuild(table, correct, source, indexes, "payload_kind = 'object'"),
        "no_constraint": missing,
    }


# -- rename_with_view -----------------------------------------------------------------------------


def _rename(p: Params) -> dict[str, str]:
    old, new, child, fk = p["old"], p["new"], p["child"], p["fk"]
    family = rename_view.FAMILY
    target = family.schemas(p)[1]
    table, indexes = target.table(new), target.indexes_of(new)
    child_table = target.table(child)
    view = family.view(p).ddl()
    renamed = [f"ALTER TABLE {old} RENAME TO {new};"] + [
        f"ALTER TABLE {new} RENAME COLUMN {a} TO {b};" for a, b in p["renames"]
    ]
    mapping = dict(p["renames"])
    texts = [mapping.get(c, c) for c in ("nm", "tel", "addr")]
    copy = {b: a for a, b in p["renames"]}
    selects = ", ".join(f"{copy[c]} AS {c}" if c in copy else c for c in table.column_names)
    # Copy-and-drop instead of ALTER TABLE RENAME: the child's REFERENCES still name the old table.
    copied = [
        table.ddl(),
        f"INSERT INTO {new} SELECT {selects} FROM {old};",
        f"DROP TABLE {old};",
        *(i.ddl() for i in indexes),
    ]
    # The child rebuilt through an inner join on its parent: rows with a NULL foreign key vanish.
    child_join = rebuild(
        child_table, {"id": f"{child}.id"}, f"{child} JOIN {new} ON {new}.id = {child}.{fk}", target.indexes_of(child)
    )
    return {
        "schema_only": "\n".join(renamed),
        "values_only": "\n".join([*renamed, f"CREATE VIEW {old} AS SELECT * FROM {new};"]),
        "no_trim": "\n".join(
            [*renamed, f"UPDATE {new} SET " + ", ".join(f"{c} = trim({c})" for c in texts) + ";", view]
        ),
        "truncate": "\n".join([f"CREATE TABLE {new} AS SELECT {selects} FROM {old};", *copied[2:], view]),
        "inner_join": "\n".join([*renamed, child_join, view]),
        "no_constraint": "\n".join([*copied, view]),
    }


# -- add_fk_orphans -------------------------------------------------------------------------------


def _foreign_key(p: Params) -> dict[str, str]:
    par, ch, fk = p["parent"], p["child"], p["fk"]
    table, indexes = _target("add_fk_orphans", p, ch)
    known = f"{fk} IN (SELECT id FROM {par})"
    placeholder = f"INSERT INTO {par} (id, name, created) VALUES (0, '(unknown)', NULL);"

    def migration(rule: str, orphan: str = f"NOT {known}", tab: Table = table, idx: tuple[Index, ...] = indexes) -> str:
        lines, where, expr = [], "", fk
        if rule == "null":
            expr = f"CASE WHEN {fk} IS NOT NULL AND {orphan} THEN NULL ELSE {fk} END"
        elif rule == "delete":
            where = f"{fk} IS NULL OR NOT ({orphan})"
        elif rule == "placeholder":
            lines.append(placeholder)
            expr = f"CASE WHEN {fk} IS NOT NULL AND {orphan} THEN 0 ELSE {fk} END"
        return "\n".join([*lines, rebuild(tab, {fk: expr}, ch, idx, where)])

    in_place = {
        "null": f"UPDATE {ch} SET {fk} = NULL WHERE {fk} IS NOT NULL AND NOT {known};",
        "delete": f"DELETE FROM {ch} WHERE {fk} IS NOT NULL AND NOT {known};",
        "placeholder": f"{placeholder}\nUPDATE {ch} SET {fk} = 0 WHERE {fk} IS NOT NULL AND NOT {known};",
    }[p["orphans"]]
    misread = {"null": "delete", "delete": "null", "placeholder": "null"}[p["orphans"]]
    joined = rebuild(table, {"id": f"{ch}.id"}, f"{ch} JOIN {par} ON {par}.id = {ch}.{fk}", indexes)
    if p["orphans"] == "placeholder":
        joined = f"{placeholder}\n{joined}"
    return {
        "schema_only": migration("keep"),
        "values_only": in_place,
        "no_trim": migration(p["orphans"], orphan=f"{fk} > (SELECT max(id) FROM {par})"),
        "truncate": migration(misread),
        "inner_join": joined,
        "no_constraint": migration(p["orphans"], tab=_loosen(table, **{fk: {"references": None}})),
    }


BUILDERS: dict[str, Callable[[Params], dict[str, str]]] = {
    "split_column": _split,
    "merge_columns": _merge,
    "change_type_cents": _cents,
    "normalise_lookup": _lookup,
    "not_null_backfill": _backfill,
    "unique_dedupe": _dedupe,
    "check_repair": _check,
    "extract_json": _json,
    "rename_with_view": _rename,
    "add_fk_orphans": _foreign_key,
}


def wrong_migration(mistake: str, family: str, params: Params) -> str:
    """The SQL of `mistake` (one of MISTAKES) on a task of `family` with knobs `params`."""
    if mistake not in MISTAKES:
        raise ValueError(f"unknown mistake {mistake!r}; known: {', '.join(MISTAKES)}")
    if family not in BUILDERS:
        raise ValueError(f"no wrong migrations for family {family!r}; known: {', '.join(BUILDERS)}")
    return BUILDERS[family](params)[mistake]


__all__ = ["BUILDERS", "MISTAKES", "wrong_migration"]
