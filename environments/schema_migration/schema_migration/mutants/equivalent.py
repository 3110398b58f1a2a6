"""The equivalent mutants, argued once: each entry names mutants by family and key, says why none can change a graded result, and when."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from schema_migration.families import Params
from schema_migration.generate import spec
from schema_migration.mutants.sweep import Outcome

__all__ = ["EQUIVALENT", "Equivalent", "is_equivalent", "key_matches", "matches"]


@dataclass(frozen=True)
class Equivalent:
    family: str
    keys: tuple[str, ...]
    """Mutant keys (see `build.Mutant.key`) this argument covers."""
    argument: str
    when: Callable[[Params], bool] | None = None
    """The task variants the argument holds for (None: all); `when_text` says which in words."""
    when_text: str = ""


def _index_desc(family: str, *keys: str) -> Equivalent:
    return Equivalent(
        family,
        keys,
        "A one-column index in DESC order holds the same entries and SQLite walks it either way, so no query or"
        " constraint sees a difference; the rules name the indexed column, not its order.",
    )


def _desc(index: str, column: str) -> str:
    return f'asc_desc: "{index}" ON "{{table}}"({column}) -> "{index}" ON "{{table}}"({column} DESC)'


def _comma(then: str, op: str) -> str:
    return f"IIF(INSTR(v, ',') {op}, {then})"


_TAIL = "TRIM(SUBSTRING(v, INSTR(v, ',') + 1))"
_HEAD = "TRIM(SUBSTRING(v, 1, INSTR(v, ',') - 1))"
_CLEAN = "clean IS NULL OR clean = '' OR clean GLOB '*[^0-9.-]*'"
_EMPTY = "TRIM(COALESCE(\"{column}\", '')) <> ''"
_RATE = '"{rate}"'
_PCT = f"{_RATE} > 1 AND {_RATE} <= 100, {_RATE} / 100.0"


def _json(path: str) -> tuple[str, ...]:
    got = f"JSON_EXTRACT(payload, '{path}')"
    return (
        f"trim_side: CAST(TRIM({got}) AS INTEGER) -> CAST(LTRIM({got}) AS INTEGER)",
        f"trim_side: CAST(TRIM({got}) AS INTEGER) -> CAST(RTRIM({got}) AS INTEGER)",
        f"trim_side: TRIM({got}) <> '' -> LTRIM({got}) <> ''",
        f"trim_side: TRIM({got}) <> '' -> RTRIM({got}) <> ''",
    )


def _percent(p: Params) -> bool:
    return bool(p["percent"])


def _first_last(p: Params) -> bool:
    return bool(p["style"] == "first_last")


def _zero(p: Params) -> bool:
    return bool(p["empty"] == "zero")


EQUIVALENT: tuple[Equivalent, ...] = (
    # An index's direction: every family with a one-column index.
    _index_desc("split_column", _desc("idx_{table}_email", "email")),
    _index_desc("merge_columns", _desc("idx_{table}_label", "label")),
    _index_desc("normalise_lookup", _desc("idx_{table}_{fk}", '"{fk}"')),
    _index_desc("not_null_backfill", _desc("idx_{table}_created_at", "created_at"), _desc("idx_{table}_{column}", '"{column}"')),
    _index_desc("unique_dedupe", _desc("{index}", '"{column}"')),
    _index_desc("check_repair", _desc("idx_{table}_name", "name")),
    _index_desc("extract_json", _desc("idx_{table}_{indexed}", '"{indexed}"')),
    _index_desc("add_fk_orphans", 'asc_desc: "idx_{child}_{fk}" ON "{child}"("{fk}") -> "idx_{child}_{fk}" ON "{child}"("{fk}" DESC)'),
    # split_column: v is trim(coalesce(name, '')).
    Equivalent(
        "split_column",
        (
            f"trim_side: {_comma(_TAIL, '> 0')} -> {_comma('L' + _TAIL, '> 0')}",
            f"trim_side: {_comma(_HEAD, '> 0')} -> {_comma('R' + _HEAD, '> 0')}",
            "trim_side: IIF(INSTR(v, ' ') > 0, TRIM(SUBSTRING(v, INSTR(v, ' ') + 1))) -> IIF(INSTR(v, ' ') > 0, LTRIM(SUBSTRING(v, INSTR(v, ' ') + 1)))",
        ),
        "v is already trimmed, so the text after the separator cannot end in a space nor the text before it start"
        " with one: the half of TRIM the mutant drops has nothing to remove.",
    ),
    Equivalent(
        "split_column",
        (
            f"comparison: {_comma(_TAIL, '> 0')} -> {_comma(_TAIL, '>= 0')}",
            f"comparison: {_comma(_HEAD, '> 0')} -> {_comma(_HEAD, '>= 0')}",
            f"integer_pm1: {_comma(_TAIL, '> 0')} -> {_comma(_TAIL, '> -1')}",
            f"integer_pm1: {_comma(_HEAD, '> 0')} -> {_comma(_HEAD, '> -1')}",
            f"integer_pm1: {_comma(_HEAD, '> 0')} -> {_comma(_HEAD, '> 1')}",
            f"short_string: {_comma(_TAIL, '> 0')} -> IIF(INSTR(v, '') > 0, {_TAIL})",
            f"short_string: {_comma(_HEAD, '> 0')} -> IIF(INSTR(v, '') > 0, {_HEAD})",
        ),
        "With no comma (instr 0) the THEN branches give trim(substr(v, 1)) = v and trim(substr(v, 1, -1)) = '',"
        " exactly the ELSE values, and a comma at position 1 gives trim(substr(v, 1, 0)) = '' too; instr(v, '')"
        " is 1, so that mutant always takes THEN, which is the same.",
    ),
    Equivalent(
        "split_column",
        ("short_string: TRIM(COALESCE(\"{column}\", '')) AS v -> TRIM(COALESCE(\"{column}\", ' ')) AS v",),
        "trim(' ') = trim('') = '': a NULL name gives the same v.",
    ),
    Equivalent(
        "split_column",
        (
            "trim_side: TRIM(COALESCE(\"{column}\", '')) AS v -> LTRIM(COALESCE(\"{column}\", '')) AS v",
            "integer_pm1: IIF(INSTR(v, ' ') > 0, SUBSTRING(v, 1, INSTR(v, ' ') - 1)) -> IIF(INSTR(v, ' ') > 1, SUBSTRING(v, 1, INSTR(v, ' ') - 1))",
            "integer_pm1: IIF(INSTR(v, ' ') > 0, TRIM(SUBSTRING(v, INSTR(v, ' ') + 1))) -> IIF(INSTR(v, ' ') > 1, TRIM(SUBSTRING(v, INSTR(v, ' ') + 1)))",
            "integer_pm1: IIF(INSTR(v, ' ') > 0, TRIM(SUBSTRING(v, INSTR(v, ' ') + 1))) -> IIF(INSTR(v, ' ') > 0, TRIM(SUBSTRING(v, INSTR(v, ' ') + 0)))",
        ),
        "Split at the first space: trailing spaces left on v only move that split into them (first part the"
        " same, the rest trimmed to the same text); a trimmed v cannot have its first space at position 1; and"
        " the rest is trimmed, so starting it at the space itself changes nothing.",
        _first_last,
        "when the name is 'First Last' (split at a space)",
    ),
    # not_null_backfill: the THEN value is the task's backfill (a constant or another column).
    Equivalent(
        "not_null_backfill",
        (
            "trim_side: IIF(TRIM(COALESCE(\"{column}\", '')) = '', *) -> IIF(LTRIM(COALESCE(\"{column}\", '')) = '', *)",
            "trim_side: IIF(TRIM(COALESCE(\"{column}\", '')) = '', *) -> IIF(RTRIM(COALESCE(\"{column}\", '')) = '', *)",
            "short_string: IIF(TRIM(COALESCE(\"{column}\", '')) = '', *) -> IIF(TRIM(COALESCE(\"{column}\", ' ')) = '', *)",
        ),
        "An emptiness test: a text is all spaces iff its ltrim, rtrim or trim is '', and trim(' ') is ''.",
    ),
    # change_type_cents
    Equivalent(
        "change_type_cents",
        (
            f"short_string: {_CLEAN} -> clean IS NULL OR clean = ' ' OR clean GLOB '*[^0-9.-]*'",
            f"short_string: {_CLEAN} -> clean IS NULL OR clean = 'x' OR clean GLOB '*[^0-9.-]*'",
            f"and_or: IIF({_CLEAN}, 0) -> IIF(clean IS NULL OR clean = '' AND clean GLOB '*[^0-9.-]*', 0)",
        ),
        "Each mutant stops sending '' to the empty branch (clean has no spaces, and 'x' also fails the GLOB);"
        " '' then reaches ELSE, where CAST('' AS REAL) is 0.0, so it becomes 0: the empty value when it is 0.",
        _zero,
        "when empty text becomes 0",
    ),
    # unique_dedupe: dedupe_map is a TEMP scaffold dropped at the end.
    Equivalent(
        "unique_dedupe",
        (
            "drop_not_null: new_id INTEGER NOT NULL -> new_id INTEGER",
            "drop_primary_key: old_id INTEGER PRIMARY KEY -> old_id INTEGER",
            "drop_statement: DROP TABLE dedupe_map",
        ),
        "dedupe_map is a TEMP table, gone with the migration's connection: new_id is min/max of a non-empty"
        " window of ids (never NULL) and old_id takes each id once, so neither constraint can fire.",
    ),
    Equivalent(
        "unique_dedupe",
        (
            f"trim_side: {_EMPTY} -> L{_EMPTY}",
            f"trim_side: {_EMPTY} -> R{_EMPTY}",
            f"unwrap_coalesce: {_EMPTY} -> TRIM(\"{{column}}\") <> ''",
            f"short_string: {_EMPTY} -> TRIM(COALESCE(\"{{column}}\", ' ')) <> ''",
        ),
        "An emptiness test: a text is all spaces iff its ltrim, rtrim or trim is ''; trim(' ') is ''; and"
        " trim(NULL) <> '' is NULL, which WHERE drops like the '' it replaced.",
    ),
    Equivalent(
        "unique_dedupe",
        (
            "lower_upper: MIN(id) OVER (PARTITION BY LOWER(TRIM(\"{column}\"))) -> MIN(id) OVER (PARTITION BY UPPER(TRIM(\"{column}\")))",
            "lower_upper: MAX(id) OVER (PARTITION BY LOWER(TRIM(\"{column}\"))) -> MAX(id) OVER (PARTITION BY UPPER(TRIM(\"{column}\")))",
        ),
        "SQLite's lower() and upper() change only ASCII letters, so two texts have equal lower() iff equal"
        " upper(): the partitions, and so the kept ids, are the same.",
    ),
    Equivalent(
        "unique_dedupe",
        ("drop_where: WHERE old_id <> new_id -> (removed)",),
        "In the child UPDATE's IN list: without it, children of kept rows are also set, to their own id"
        " (new_id = old_id), which changes nothing.",
    ),
    # check_repair
    Equivalent(
        "check_repair",
        (
            f"comparison: IIF({_RATE} < 0, 0.0) -> IIF({_RATE} <= 0, 0.0)",
            f"comparison: IIF({_RATE} > 1, 1.0) -> IIF({_RATE} >= 1, 1.0)",
        ),
        "The value at the bound is sent to the branch that returns that same value: 0 becomes 0.0 and 1"
        " becomes 1.0 (a REAL column stores 0 and 1 as 0.0 and 1.0; -0.0 equals 0.0).",
    ),
    Equivalent(
        "check_repair",
        (
            f"comparison: IIF({_PCT}) -> IIF({_RATE} > 1 AND {_RATE} < 100, {_RATE} / 100.0)",
            f"integer_pm1: IIF({_RATE} > 1, 1.0) -> IIF({_RATE} > 2, 1.0)",
        ),
        "With percentages, 100 falls through to 'above 1 becomes 1.0', which is 100 / 100; and every value in"
        " (1, 100] is taken by the percentage branch first, so the last branch only sees values above 100.",
        _percent,
        "when values in (1, 100] are percentages",
    ),
    # extract_json
    Equivalent(
        "extract_json",
        _json("$.user.id") + _json("$.session"),
        "trim() <> '' is an emptiness test (all spaces iff ltrim or rtrim is ''), and CAST(... AS INTEGER)"
        " skips leading and trailing spaces itself; it is reached only once the trimmed text is all digits.",
    ),
    # rename_with_view
    Equivalent(
        "rename_with_view",
        ("swap_columns: SELECT *",),
        "Column order is not graded (score.py): the compatibility view keeps every column's name and values,"
        " so swapping two of its columns changes no row the grader compares.",
    ),
)


def key_matches(pattern: str, key: str) -> bool:
    """A listed key matches exactly, except that each "*" in it stands for any text (the THEN value a
    task variant draws, the columns a view happens to have)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), key, re.S) is not None


def matches(entry: Equivalent, family: str, key: str, params: Params) -> bool:
    return entry.family == family and any(key_matches(k, key) for k in entry.keys) and (entry.when is None or entry.when(params))


def is_equivalent(o: Outcome) -> bool:
    """Whether the table argues `o` equivalent.

    A mutant that survives the sweep and is not in this table is a hole in the held-out rows (or in
    the grader's checks). `tests/environments/schema_migration/test_mutants.py` grades every entry's mutants and
    the reference on a dataset built to tell them apart (`adversary`) and requires identical scores.
    """
    params = spec(o.seed).params
    return any(matches(e, o.family, o.key, params) for e in EQUIVALENT)
