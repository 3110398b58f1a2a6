"""The equivalent mutants, argued once: each entry names mutants by family and key, says why none can change a graded result, and when."""

from __future__ import annotations

from arena_kit.adversaries.mutation import equivalence
from arena_kit.adversaries.mutation.sweep import Outcome
from schema_migration.families import Params
from schema_migration.generate import spec

__all__ = ["EQUIVALENT", "Equivalent", "is_equivalent"]

Equivalent = equivalence.Equivalent[Params]
"""An argument over this environment's task parameters (`arena_kit.adversaries.mutation.equivalence`)."""


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
_NUMBER = "NOT u GLOB '*[^0-9.]*' AND NOT u GLOB '*.*.*'"
_WHOLE = "SUBSTRING(u, 1, INSTR(u || '.', '.') - 1)"
_FRAC = "SUBSTRING(u, INSTR(u || '.', '.') + 1)"
_WS = "' ' || CHAR(9) || CHAR(10) || CHAR(13) || CHAR(160)"
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


def _int_json(path: str) -> tuple[str, ...]:
    """The careless edits of an INTEGER JSON field that cannot change it (see the argument)."""
    got = f"JSON_EXTRACT(payload, '{path}')"
    cast, empty, digits = f"CAST(TRIM({got}) AS INTEGER)", f"TRIM({got}) <> ''", f"TRIM({got}) GLOB '*[^0-9]*'"
    return (
        f"trim_whitespace: {cast} -> CAST(TRIM({got}, {_WS}) AS INTEGER)",
        f"trim_whitespace: {empty} -> TRIM({got}, {_WS}) <> ''",
        f"abs_value: …T {digits}, {cast}) -> …T {digits}, ABS({cast}))",
        f"collapse_spaces: {cast} -> CAST(REPLACE(TRIM({got}), '  ', ' ') AS INTEGER)",
        f"collapse_spaces: {empty} -> REPLACE(TRIM({got}), '  ', ' ') <> ''",
        f"collapse_spaces: {digits} -> REPLACE(TRIM({got}), '  ', ' ') GLOB '*[^0-9]*'",
    )


_ROWID = (
    "The column is `id INTEGER PRIMARY KEY`, an alias of the rowid: an id is never NULL or '', so"
    " NULLIF(id, '') and COALESCE(id, '') are id, and LOWER(id) is its decimal text, which the rowid"
    " alias stores back as the same integer."
)
_TWO_SIDED = (
    "The cast changes only TEXT and BLOB values, which the other, unchanged side (c <= bound) already refuses:"
    " SQLite orders every TEXT and BLOB above every number; on numbers and NULL CAST(c AS REAL) has the same sign."
)
_NOT_NULL = "The source column is NOT NULL, so COALESCE(c, '') is c on every row the migration copies."


def _lower(p: Params) -> bool:
    return bool(p["case"] == "lower")


def _name_renamed_first(p: Params) -> bool:
    return bool(p["renames"][0][0] == "nm")


def _capped(p: Params) -> bool:
    return p["cap"] is not None


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
    _index_desc(
        "not_null_backfill", _desc("idx_{table}_created_at", "created_at"), _desc("idx_{table}_{column}", '"{column}"')
    ),
    _index_desc("unique_dedupe", _desc("{index}", '"{column}"')),
    _index_desc("check_repair", _desc("idx_{table}_name", "name")),
    _index_desc("extract_json", _desc("idx_{table}_{indexed}", '"{indexed}"')),
    _index_desc(
        "add_fk_orphans",
        'asc_desc: "idx_{child}_{fk}" ON "{child}"("{fk}") -> "idx_{child}_{fk}" ON "{child}"("{fk}" DESC)',
    ),
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
            'lower_upper: MIN(id) OVER (PARTITION BY LOWER(TRIM("{column}"))) -> MIN(id) OVER (PARTITION BY UPPER(TRIM("{column}")))',
            'lower_upper: MAX(id) OVER (PARTITION BY LOWER(TRIM("{column}"))) -> MAX(id) OVER (PARTITION BY UPPER(TRIM("{column}")))',
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
    # Careless edits of the rowid alias (issue 38's operators), in every rebuilt table.
    *(
        Equivalent(
            family,
            (
                "fold_case: id -> LOWER(id)",
                "blank_to_null: id -> NULLIF(id, '')",
                "null_to_blank: id -> COALESCE(id, '')",
            ),
            _ROWID,
        )
        for family in (
            "split_column",
            "merge_columns",
            "change_type_cents",
            "normalise_lookup",
            "not_null_backfill",
            "unique_dedupe",
            "check_repair",
            "extract_json",
            "add_fk_orphans",
        )
    ),
    # COALESCE(c, '') of a NOT NULL source column.
    Equivalent("split_column", ("null_to_blank: created_at -> COALESCE(created_at, '')",), _NOT_NULL),
    Equivalent("merge_columns", ("null_to_blank: label -> COALESCE(label, '')",), _NOT_NULL),
    Equivalent("change_type_cents", ("null_to_blank: sku -> COALESCE(sku, '')",), _NOT_NULL),
    Equivalent("normalise_lookup", ("null_to_blank: title -> COALESCE(title, '')",), _NOT_NULL),
    Equivalent(
        "not_null_backfill",
        ("null_to_blank: customer -> COALESCE(customer, '')", "null_to_blank: created_at -> COALESCE(created_at, '')"),
        _NOT_NULL,
    ),
    Equivalent("check_repair", ("null_to_blank: name -> COALESCE(name, '')",), _NOT_NULL),
    Equivalent("extract_json", ("null_to_blank: received_at -> COALESCE(received_at, '')",), _NOT_NULL),
    Equivalent(
        "rename_with_view",
        (
            'null_to_blank: "{renames[0][1]}" AS "{renames[0][0]}" -> COALESCE("{renames[0][1]}", \'\') AS "{renames[0][0]}"',
        ),
        _NOT_NULL + " (Here: the view column nm, from the NOT NULL column renamed to name.)",
        _name_renamed_first,
        "when nm is the first column renamed",
    ),
    # change_type_cents: the number test.
    Equivalent(
        "change_type_cents",
        (
            "anchor_pattern: …u GLOB '*[^0-9.]*' AND NOT u GLOB '*.*.*' AND u GLOB '*[0-9]*' -> …u GLOB '*[^0-9.]*' AND NOT u GLOB '*.*.*' AND u GLOB '*[0-9]'",
        ),
        "Every text the other conjuncts accept ends in a digit (digits, or a mark followed by one or two digits),"
        " so 'contains a digit' and 'ends with a digit' agree on them.",
    ),
    Equivalent(
        "change_type_cents",
        (f"widen_class: {_NUMBER} -> NOT u GLOB '*[^ 0-9.]*' AND NOT u GLOB '*.*.*'",),
        "u is the cleaned text, from which every U+0020 was removed: letting a space through the class changes nothing.",
    ),
    Equivalent(
        "change_type_cents",
        (
            f"char_class: {_NUMBER} AND u GLOB '*[0-9]*' -> {_NUMBER} AND u GLOB '*[1-9]*'",
            f"drop_conjunct: {_NUMBER} AND u GLOB '*[0-9]*' AND (NOT u GLOB '*.*'* -> {_NUMBER} AND (NOT u GLOB '*.*'*",
        ),
        "A text the mutant treats differently is either a number made only of zeros ('0', '-0.00'), which is 0"
        " either way, or a text with no digit that passes the other conjuncts ('', '-'), which CAST makes 0:"
        " both give 0, the empty value.",
        _zero,
        "when an empty or invalid amount becomes 0",
    ),
    # normalise_lookup: the projected key of the lookup rows.
    Equivalent(
        "normalise_lookup",
        ("blank_to_null: k -> NULLIF(k, '')", "null_to_blank: k -> COALESCE(k, '')"),
        "The lookup rows come FROM (...) WHERE k <> '', which already drops NULL and '' keys.",
    ),
    Equivalent(
        "normalise_lookup",
        ("fold_case: k -> LOWER(k)",),
        "The key is already lower(trim(value)); SQLite's lower() is idempotent.",
        _lower,
        "when keys are lower-cased",
    ),
    # Emptiness tests: collapsing runs of spaces never turns a non-empty text into ''.
    Equivalent(
        "not_null_backfill",
        (
            "collapse_spaces: IIF(TRIM(COALESCE(\"{column}\", '')) = '', *) -> IIF(REPLACE(TRIM(COALESCE(\"{column}\", '')), '  ', ' ') = '', *)",
        ),
        "An emptiness test: replacing '  ' by ' ' leaves a non-empty text non-empty and '' as ''.",
    ),
    Equivalent(
        "unique_dedupe",
        (
            "collapse_spaces: TRIM(COALESCE(\"{column}\", '')) <> '' -> REPLACE(TRIM(COALESCE(\"{column}\", '')), '  ', ' ') <> ''",
        ),
        "An emptiness test: replacing '  ' by ' ' leaves a non-empty text non-empty and '' as ''.",
    ),
    # change_type_cents: the exact value (sign, whole digits, two decimals joined as text, cast once).
    Equivalent(
        "change_type_cents",
        (
            f"short_string: {_FRAC} || '00' -> {_FRAC} || '00x'",
            f"separator: {_FRAC} || '00' -> {_FRAC} || '00 '",
            f"short_string: {_WHOLE} -> SUBSTRING(u, 1, INSTR(u || '.x', '.') - 1)",
            f"separator: {_WHOLE} -> SUBSTRING(u, 1, INSTR(u || '. ', '.') - 1)",
            f"short_string: {_FRAC} || '00' -> SUBSTRING(u, INSTR(u || '.x', '.') + 1) || '00'",
            f"separator: {_FRAC} || '00' -> SUBSTRING(u, INSTR(u || '. ', '.') + 1) || '00'",
        ),
        "The decimals of a number are 0 to 2 digits and only the first 2 characters of decimals || padding are"
        " kept, so they never reach a third padding character ('00x', '00 '); the '.' appended to u only marks"
        " where a number without a mark ends, and INSTR finds the first '.' whatever follows it ('.x', '. ').",
    ),
    # check_repair: CHECKs with two sides, and the repair of a REAL column.
    Equivalent(
        "check_repair",
        ('cast_operand: CHECK ("{qty}" >= 0 AND "{qty}" <= *) -> CHECK (CAST("{qty}" AS REAL) >= 0 AND "{qty}" <= *)',),
        _TWO_SIDED,
        _capped,
        "when the quantity has a cap",
    ),
    Equivalent(
        "check_repair",
        (
            'cast_operand: "{rate}" REAL CHECK ("{rate}" >= 0 AND "{rate}" <= 1) -> "{rate}" REAL CHECK (CAST("{rate}" AS REAL) >= 0 AND "{rate}" <= 1)',
        ),
        _TWO_SIDED,
    ),
    Equivalent(
        "check_repair",
        (
            'cast_operand: IIF("{rate}" < 0, 0.0) -> IIF(CAST("{rate}" AS REAL) < 0, 0.0)',
            'cast_operand: IIF("{rate}" > 1, 1.0) -> IIF(CAST("{rate}" AS REAL) > 1, 1.0)',
            'cast_operand: IIF("{rate}" > 1 AND "{rate}" <= 100, "{rate}" / 100.0) -> IIF(CAST("{rate}" AS REAL) > 1 AND "{rate}" <= 100, "{rate}" / 100.0)',
            'cast_operand: IIF("{rate}" > 1 AND "{rate}" <= 100, "{rate}" / 100.0) -> IIF("{rate}" > 1 AND CAST("{rate}" AS REAL) <= 100, "{rate}" / 100.0)',
        ),
        "The source rate column is REAL: it holds REAL numbers and NULL (the rules define no other values), on"
        " which CAST(rate AS REAL) is rate.",
    ),
    Equivalent(
        "check_repair",
        ('round_operand: IIF("{rate}" > 1, 1.0) -> IIF(ROUND("{rate}", 2) > 1, 1.0)',),
        "With percentages the branch before takes every value in (1, 100]: this one sees only values above 100,"
        " which stay above 1 when rounded.",
        _percent,
        "when values in (1, 100] are percentages",
    ),
    # extract_json: the INTEGER-from-text branch (emptiness test, all-digits test, then CAST).
    Equivalent(
        "extract_json",
        _int_json("$.user.id") + _int_json("$.session"),
        "The CAST is reached only once trim(x) is all ASCII digits: such a text has no whitespace at its ends,"
        " no runs of spaces and no sign, so trimming more, collapsing spaces or ABS() change nothing; the"
        " emptiness test feeds the all-digits test, which refuses any text of only whitespace either way, and"
        " collapsing spaces leaves a space in every text that had one.",
    ),
    # rename_with_view
    Equivalent(
        "rename_with_view",
        ("swap_columns: SELECT *",),
        "Column order is not graded (score.py): the compatibility view keeps every column's name and values,"
        " so swapping two of its columns changes no row the grader compares.",
    ),
)


def is_equivalent(o: Outcome) -> bool:
    """Whether the table argues `o` equivalent.

    A mutant that survives the sweep and is not in this table is a hole in the held-out rows (or in
    the grader's checks). `tests/environments/schema_migration/test_mutants.py` grades every entry's mutants and
    the reference on a dataset built to tell them apart (`adversary`) and requires identical scores.
    """
    return equivalence.listed(EQUIVALENT, o.family, o.key, spec(o.seed).params)
