"""Graded on the rules, not on the sample (issue 38): each wrong migration below scored 1.000 on the grader before it, and now scores at most the miss cap (0.25).

Every case is proven wrong by the rules alone (a value class the rules name, or a later write the
target accepts or refuses), is written as an agent would write it, and is graded on a dev and a test
task of its family.
"""

from collections.abc import Callable

import pytest
from schema_migration.families import BY_NAME
from schema_migration.families.base import literal, rebuild
from schema_migration.generate import Spec, seeds, spec
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP

pytestmark = pytest.mark.slow  # graded migrations: > 1 s of CPU each module

WS = "' ' || char(9) || char(10) || char(13) || char(160)"
"""The whitespace agents trim most often: space, tab, newline, carriage return, no-break space."""


def _tasks(family: str, ok: Callable[[dict], bool] = lambda p: True) -> list[Spec]:
    """The first dev and the first test task of `family` whose knobs pass `ok`."""
    out = []
    for split in ("dev", "test"):
        out.append(next(s for seed in seeds(split, 600) if (s := spec(seed)).family == family and ok(s.params)))
    return out


def _ref(s: Spec) -> str:
    return BY_NAME[s.family].migration(s.params)


def _sub(sql: str, old: str, new: str) -> str:
    assert old in sql, old
    return sql.replace(old, new)


def _edit(*pairs: str) -> Callable[[Spec], str]:
    """The reference with each old text replaced by the new one after it (old, new, old, new, ...),
    every text formatted with the task's knobs and `WS`."""

    def build(s: Spec) -> str:
        sql = _ref(s)
        for old, new in zip(pairs[::2], pairs[1::2], strict=True):
            sql = _sub(sql, old.format(WS=WS, **s.params), new.format(WS=WS, **s.params))
        return sql

    return build


def _each_part(new: str) -> Callable[[Spec], str]:
    """merge_columns' reference with every trim(part) replaced by `new` formatted with the part."""

    def build(s: Spec) -> str:
        sql = _ref(s)
        for part in s.params["parts"]:
            sql = _sub(sql, f"trim({part})", new.format(part=part, WS=WS))
        return sql

    return build


def _rate_check(s: Spec, new: str) -> str:
    r = s.params["rate"]
    return _sub(_ref(s), f"CHECK ({r} >= 0 AND {r} <= 1)", f"CHECK ({new.format(r=r)})")


def _placeholder_if_orphans(s: Spec) -> str:
    par, ch, fk = s.params["parent"], s.params["child"], s.params["fk"]
    return _sub(
        _ref(s),
        f"INSERT INTO {par} (id, name, created) VALUES (0, '(unknown)', NULL);",
        f"INSERT INTO {par} (id, name, created) SELECT 0, '(unknown)', NULL\n"
        f"  WHERE EXISTS (SELECT 1 FROM {ch} WHERE {fk} IS NOT NULL AND {fk} NOT IN (SELECT id FROM {par}));",
    )


def _json_signed(s: Spec) -> str:
    sql = _ref(s)
    for _, path, kind in s.params["fields"]:
        if kind == "INTEGER":
            got = f"json_extract(payload, '{path}')"
            sql = _sub(
                sql,
                f"trim({got}) NOT GLOB '*[^0-9]*'",
                f"ltrim(trim({got}), '+-') <> '' AND ltrim(trim({got}), '+-') NOT GLOB '*[^0-9]*'",
            )
    return sql


def _cents(s: Spec, invalid: str) -> str:
    """A cents migration that cleans as the rules say and calls a text a number unless `invalid` holds."""
    p = s.params
    thousands = "," if p["format"] == "us" else "."
    clean = f"replace(replace(replace({p['column']}, ' ', ''), {literal(p['symbol'])}, ''), {literal(thousands)}, '')"
    if p["format"] == "eu":
        clean = f"replace({clean}, ',', '.')"
    empty = "0" if p["empty"] == "zero" else "NULL"
    value = f"CASE WHEN {invalid} THEN {empty} ELSE CAST(round(CAST(clean AS REAL) * 100) AS INTEGER) END"
    table = BY_NAME[s.family].schemas(p)[1].tables[0]
    return rebuild(table, {p["target"]: value}, f"(SELECT *, {clean} AS clean FROM {p['table']}) AS src")


def _view_date(s: Spec) -> str:
    renames = dict(s.params["renames"])
    if "created" in renames:
        return _sub(_ref(s), f"{renames['created']} AS created", f"date({renames['created']}) AS created")
    return _sub(_ref(s), ", created FROM", ", date(created) AS created FROM")


def _comma_when_no_space(s: Spec) -> str:
    sql = _sub(
        _ref(s),
        "THEN substr(v, 1, instr(v, ' ') - 1) ELSE v END",
        "THEN substr(v, 1, instr(v, ' ') - 1) WHEN instr(v, ',') > 0 THEN trim(substr(v, instr(v, ',') + 1)) ELSE v END",
    )
    return _sub(
        sql,
        "THEN trim(substr(v, instr(v, ' ') + 1)) ELSE '' END",
        "THEN trim(substr(v, instr(v, ' ') + 1)) WHEN instr(v, ',') > 0 THEN trim(substr(v, 1, instr(v, ',') - 1)) ELSE '' END",
    )


def _separators_rtrimmed(s: Spec) -> str:
    """Each kept part followed by the separator, then the separator's characters cut off the end."""
    p = s.params
    sep = literal(p["sep"])
    joined = f"rtrim({' || '.join(f'coalesce(nullif(trim({x}), {chr(39) * 2}) || {sep}, {chr(39) * 2})' for x in p['parts'])}, {sep})"
    target = BY_NAME[s.family].schemas(p)[1]
    value = f"nullif({joined}, '')" if p["empty"] == "null" else joined
    return rebuild(target.table(p["table"]), {p["target"]: value}, p["table"], target.indexes)


WRONG: dict[str, tuple[str, Callable[[dict], bool], Callable[[Spec], str]]] = {
    # Whitespace the rules exclude: "U+0020 only".
    "merge: trim all whitespace": ("merge_columns", lambda p: True, _each_part("trim({part}, {WS})")),
    "lookup: trim all whitespace": (
        "normalise_lookup",
        lambda p: True,
        _edit("trim({column})", "trim({column}, {WS})", "trim({table}.{column})", "trim({table}.{column}, {WS})"),
    ),
    "backfill: trim all whitespace": (
        "not_null_backfill",
        lambda p: True,
        _edit(
            "trim(coalesce({column}, ''))",
            "trim(coalesce({column}, ''), {WS})",
            "ELSE trim({column})",
            "ELSE trim({column}, {WS})",
        ),
    ),
    "dedupe: trim all whitespace": (
        "unique_dedupe",
        lambda p: True,
        _edit(
            "trim({column})",
            "trim({column}, {WS})",
            "trim(coalesce({column}, ''))",
            "trim(coalesce({column}, ''), {WS})",
        ),
    ),
    # Behaviour after the migration.
    "merge: UNIQUE for the plain label index": (
        "merge_columns",
        lambda p: True,
        _edit("CREATE INDEX", "CREATE UNIQUE INDEX"),
    ),
    "check: UNIQUE for the plain name index": (
        "check_repair",
        lambda p: True,
        _edit("CREATE INDEX", "CREATE UNIQUE INDEX"),
    ),
    "check: loose CHECK on round(rate, 2)": (
        "check_repair",
        lambda p: True,
        lambda s: _rate_check(s, "round({r}, 2) >= 0 AND round({r}, 2) <= 1"),
    ),
    "check: loose CHECK on CAST(rate AS REAL)": (
        "check_repair",
        lambda p: True,
        lambda s: _rate_check(s, "CAST({r} AS REAL) >= 0 AND CAST({r} AS REAL) <= 1"),
    ),
    "check: strict CHECK typeof(qty) = 'integer'": (
        "check_repair",
        lambda p: True,
        _edit("CHECK ({qty} >= 0", "CHECK (typeof({qty}) = 'integer' AND {qty} >= 0"),
    ),
    # Right only for the values present.
    "fk: placeholder inserted only if orphans exist": (
        "add_fk_orphans",
        lambda p: p["orphans"] == "placeholder",
        _placeholder_if_orphans,
    ),
    "json: signed digit strings taken as integers": (
        "extract_json",
        lambda p: any(f[2] == "INTEGER" for f in p["fields"]),
        _json_signed,
    ),
    "cents: a '+' sign accepted": (
        "change_type_cents",
        lambda p: True,
        lambda s: _cents(s, "clean IS NULL OR clean = '' OR clean GLOB '*[^0-9.+-]*'"),
    ),
    "cents: three decimals rounded to cents": (
        "change_type_cents",
        lambda p: True,
        lambda s: _cents(s, "clean IS NULL OR clean = '' OR clean GLOB '*[^0-9.-]*'"),
    ),
    "cents: digit-led junk read as a number": (
        "change_type_cents",
        lambda p: p["empty"] == "zero",
        lambda s: _cents(s, "clean IS NULL OR clean = ''"),
    ),
    "check: NULL updated_at made ''": (
        "check_repair",
        lambda p: True,
        _edit("updated_at\n  FROM", "coalesce(updated_at, '')\n  FROM"),
    ),
    "check: rows with a NULL updated_at dropped": (
        "check_repair",
        lambda p: True,
        _edit("FROM {table};", "FROM {table} WHERE updated_at IS NOT NULL;"),
    ),
    "rename: date(created) in the view": ("rename_with_view", lambda p: True, _view_date),
    "split: email lower-cased": (
        "split_column",
        lambda p: True,
        _edit("END, email, created_at", "END, lower(email), created_at"),
    ),
    "backfill: non-dates treated as missing": (
        "not_null_backfill",
        lambda p: True,
        _edit("CASE WHEN trim(coalesce({column}, '')) = ''", "CASE WHEN date(trim({column})) IS NULL"),
    ),
    "merge: inner runs of spaces collapsed": (
        "merge_columns",
        lambda p: True,
        _each_part("replace(trim({part}), '  ', ' ')"),
    ),
    # Found by writing wrong migrations from the prompt alone (round 2 of issue 38).
    "split: a comma splits when there is no space": (
        "split_column",
        lambda p: p["style"] == "first_last",
        _comma_when_no_space,
    ),
    "merge: separators cut off the end with rtrim": ("merge_columns", lambda p: True, _separators_rtrimmed),
    "check: a fractional quantity rounded": (
        "check_repair",
        lambda p: p["cap"] is not None,
        _edit("min(max({qty}, 0), {cap})", "CAST(round(min(max({qty}, 0), {cap})) AS INTEGER)"),
    ),
    "rename: the view shows positive ids only": (
        "rename_with_view",
        lambda p: True,
        _edit("FROM {new};", "FROM {new} WHERE id > 0;"),
    ),
    "fk: orphans found through CAST(fk AS INTEGER)": (
        "add_fk_orphans",
        lambda p: True,
        _edit("{fk} IN (SELECT id FROM {parent})", "CAST({fk} AS INTEGER) IN (SELECT id FROM {parent})"),
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG))
def test_a_migration_wrong_on_a_rule_scores_at_most_the_miss_cap(case):
    family, ok, build = WRONG[case]
    for s in _tasks(family, ok):
        result = grade(build(s), s)
        assert result.score <= MISS_CAP, (s.seed, result.reason)


@pytest.mark.parametrize("where, meets", [("{col} IS NOT NULL", True), ("id > 0", False), ("{col} <> ''", False)])
def test_a_partial_unique_index_meets_unique_exactly_when_it_leaves_out_only_nulls(where, meets):
    """The prompt asks for "a UNIQUE constraint or a unique index on that one column". NULLs never
    conflict under UNIQUE, so an index WHERE col IS NOT NULL enforces exactly the same; any other
    condition leaves some value free to repeat (the planner decides: it must serve every col = ?)."""
    for s in _tasks("unique_dedupe"):
        col = s.params["column"]
        sql = _sub(_ref(s), f"({col});", f"({col}) WHERE {where.format(col=col)};")
        result = grade(sql, s)
        assert (result.score == 1.0) is meets, result.reason
        if not meets:
            assert result.score <= MISS_CAP
            assert f"unique index on {s.params['table']}({col})" in result.failed_checks
