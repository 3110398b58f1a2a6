"""Wrong migrations score at most the miss cap (0.25): a missed requirement is a gate, 1 % of rows wrong halves the score, TEMP objects fake nothing."""

import math

import pytest
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.families.cents import EXACT_CENTS
from schema_migration.generate import expected_rows, seeds, spec, untouched
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP

pytestmark = pytest.mark.slow  # sweeps of graded migrations: > 1 s of CPU each module

DEV = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}


def _task(family: str):
    s = spec(DEV[family])
    return s, BY_NAME[family].migration(s.params)


def _changed(sql: str, old: str, new: str) -> str:
    assert old in sql, old
    return sql.replace(old, new)


def test_a_foreign_key_never_declared_scores_at_most_the_miss_cap():
    s, sql = _task("add_fk_orphans")
    p = s.params
    result = grade(_changed(sql, f" REFERENCES {p['parent']}(id)", ""), s)
    assert result.score <= MISS_CAP, result.reason
    assert f"{p['child']}.{p['fk']} references {p['parent']}(id)" in result.failed_checks


def test_a_check_constraint_never_added_scores_at_most_the_miss_cap():
    s, sql = _task("check_repair")
    weakened = _changed(sql, f" CHECK ({BY_NAME['check_repair']._qty_check(s.params)})", "")
    result = grade(weakened, s)
    assert result.score <= MISS_CAP, result.reason
    assert any(
        name.startswith(f"later writes to {s.params['table']}.{s.params['qty']} ") for name in result.failed_checks
    )


def test_an_old_column_left_in_place_scores_at_most_the_miss_cap():
    s, _ = _task("split_column")
    p = s.params
    t, first, last = p["table"], p["first"], p["last"]
    v = f"trim(coalesce({p['column']}, ''))"
    sql = f"""
        ALTER TABLE {t} ADD COLUMN {first} TEXT NOT NULL DEFAULT '';
        ALTER TABLE {t} ADD COLUMN {last} TEXT NOT NULL DEFAULT '';
        UPDATE {t} SET
          {first} = CASE WHEN instr({v}, ',') > 0 THEN trim(substr({v}, instr({v}, ',') + 1)) ELSE {v} END,
          {last} = CASE WHEN instr({v}, ',') > 0 THEN trim(substr({v}, 1, instr({v}, ',') - 1)) ELSE '' END;
    """
    assert p["style"] == "last_comma_first"
    result = grade(sql, s)
    assert result.rows == 1.0, result.reason  # every row right: only the kept column is wrong
    assert result.score <= MISS_CAP
    assert any(name.startswith(f"{t} has no other columns") for name in result.failed_checks)


def test_indexes_lost_in_a_rebuild_score_at_most_the_miss_cap():
    s, sql = _task("not_null_backfill")
    dropped = "\n".join(line for line in sql.splitlines() if not line.startswith("CREATE INDEX"))
    result = grade(dropped, s)
    assert result.rows == 1.0 and result.score <= MISS_CAP, result.reason
    assert any(name.startswith("index on") for name in result.failed_checks)


def test_a_target_table_replaced_by_a_view_scores_at_most_the_miss_cap():
    s, sql = _task("split_column")
    t = s.params["table"]
    cols = ", ".join(s.target.table(t).column_names)
    as_view = sql.replace(
        f"ALTER TABLE {t}__new RENAME TO {t};",
        f"ALTER TABLE {t}__new RENAME TO {t}_data;\nCREATE VIEW {t} AS SELECT {cols} FROM {t}_data;",
    )
    as_view = "\n".join(line for line in as_view.splitlines() if not line.startswith("CREATE INDEX"))
    result = grade(as_view, s)
    assert result.score <= MISS_CAP, result.reason
    assert f"{t} is a table" in result.failed_checks


def test_cents_truncated_instead_of_rounded_score_at_most_the_miss_cap():
    s, sql = _task("change_type_cents")
    result = grade(_changed(sql, EXACT_CENTS, "CAST(CAST(clean AS REAL) * 100 AS INTEGER)"), s)
    assert result.row_stats is not None and result.row_stats.wrong > 0
    assert result.score <= MISS_CAP, result.reason


def test_float_cents_in_an_integer_column_do_not_match_the_integer():
    s, sql = _task("change_type_cents")
    result = grade(_changed(sql, EXACT_CENTS, "CAST(clean AS REAL) * 100"), s)
    assert result.row_stats is not None and result.row_stats.wrong > 0
    assert f"{s.params['table']}.{s.params['target']}" in result.row_stats.columns
    assert result.score <= MISS_CAP, result.reason


def test_json_integers_not_trimmed_score_at_most_the_miss_cap():
    s, sql = _task("extract_json")
    name, path, kind = next(f for f in s.params["fields"] if f[2] == "INTEGER")
    got = f"json_extract(payload, '{path}')"
    result = grade(_changed(sql, f"trim({got})", got), s)
    assert result.row_stats is not None and result.row_stats.columns.get(f"{s.params['table']}.{name}", 0) > 0
    assert result.score <= MISS_CAP, result.reason


def test_a_name_not_trimmed_before_splitting_scores_at_most_the_miss_cap():
    s, sql = _task("split_column")
    result = grade(_changed(sql, f"trim(coalesce({s.params['column']}, ''))", f"coalesce({s.params['column']}, '')"), s)
    assert result.row_stats is not None and result.row_stats.wrong > 0
    assert result.score <= MISS_CAP, result.reason


def _values_only_check_repair(s) -> tuple[str, str]:
    """(repairing UPDATEs without any CHECK, the WHERE clause of rows the CHECKs reject)."""
    p = s.params
    t, q, r = p["table"], p["qty"], p["rate"]
    family = BY_NAME["check_repair"]
    qty = f"max({q}, 0)" if p["cap"] is None else f"min(max({q}, 0), {p['cap']})"
    percent = f"WHEN {r} > 1 AND {r} <= 100 THEN {r} / 100.0 " if p["percent"] else ""
    rate = f"CASE WHEN {r} IS NULL THEN NULL WHEN {r} < 0 THEN 0.0 {percent}WHEN {r} > 1 THEN 1.0 ELSE {r} END"
    bad = f"NOT ({family._qty_check(p).replace(q, 'NEW.' + q)}) OR NOT (coalesce(NEW.{r} >= 0 AND NEW.{r} <= 1, 1))"
    return f"UPDATE {t} SET {q} = {qty}, {r} = {rate};", bad


def test_a_temp_trigger_does_not_fake_a_check_constraint():
    s, _ = _task("check_repair")
    t = s.params["table"]
    updates, bad = _values_only_check_repair(s)
    fake = f"{updates}\nCREATE TEMP TRIGGER fake_check BEFORE INSERT ON main.{t} WHEN {bad} BEGIN SELECT RAISE(ABORT, 'rejected'); END;"
    result = grade(fake, s)
    assert result.rows == 1.0, result.reason
    assert result.score <= MISS_CAP
    assert any(
        name.startswith("later writes to") and "refused by the target, accepted here" in name
        for name in result.failed_checks
    )


def test_a_temp_table_with_the_checks_does_not_fake_the_constraint():
    s, sql = _task("check_repair")
    t = s.params["table"]
    updates, _ = _values_only_check_repair(s)
    ddl = sql[sql.index(f"CREATE TABLE {t}__new") : sql.index(";") + 1].replace(
        f"CREATE TABLE {t}__new", f"CREATE TEMP TABLE {t}"
    )
    result = grade(f"{updates}\n{ddl}", s)
    assert result.rows == 1.0, result.reason
    assert result.score <= MISS_CAP
    assert any(
        name.startswith("later writes to") and "refused by the target, accepted here" in name
        for name in result.failed_checks
    )


@pytest.mark.parametrize("share", [0.01, 0.03])
def test_corrupting_one_percent_of_the_rows_or_more_scores_at_most_the_miss_cap(share):
    s, sql = _task("not_null_backfill")
    t = s.params["table"]
    n = math.ceil(share * sum(len(rows) for rows in expected_rows(s, heldout_rows(s)).values()))
    result = grade(
        f"{sql}\nUPDATE {t} SET customer = customer || '!' WHERE id IN (SELECT id FROM {t} ORDER BY id LIMIT {n});", s
    )
    assert result.row_stats is not None and result.row_stats.wrong == n
    assert result.score <= MISS_CAP, result.reason


# --- Round 2: holes the adversary found (H-numbers of its report). ---


def _with_fillers(family: str, *, views: bool = False, triggers: bool = False):
    """The first dev task of `family` whose untouched objects include a view / a trigger."""
    for seed in seeds("dev", 400):
        s = spec(seed)
        kept = untouched(s)
        if s.family == family and (kept.views or not views) and (kept.triggers or not triggers):
            return s, BY_NAME[family].migration(s.params), kept
    raise AssertionError(f"no dev task of {family} with the fillers asked for")


def test_rows_deleted_from_an_untouched_table_score_at_most_the_miss_cap():
    s, sql = _task("check_repair")
    filler = untouched(s).tables[0].name
    result = grade(sql + f"\nDELETE FROM {filler} WHERE rowid IN (SELECT rowid FROM {filler} LIMIT 10);", s)
    assert result.score <= MISS_CAP, result.reason
    assert any(name.startswith(f"all rows of {filler} as expected") for name in result.failed_checks)


def test_a_small_touched_table_wholly_wrong_scores_at_most_the_miss_cap():
    s = spec(1_000_013)  # a task whose lookup names differ from the main table's values only in case
    assert s.family == "normalise_lookup"
    sql = BY_NAME[s.family].migration(s.params)
    result = grade(sql + f"\nUPDATE {s.params['lookup']} SET name = upper(name);", s)
    assert result.score <= MISS_CAP, result.reason


def test_a_misnamed_placeholder_parent_row_scores_at_most_the_miss_cap():
    s, sql = _task("add_fk_orphans")
    result = grade(_changed(sql, "'(unknown)'", "'unknown'"), s)
    assert result.score <= MISS_CAP, result.reason


def test_the_row_factor_is_the_worst_objects_not_the_pooled_share():
    s, sql = _task("check_repair")
    filler = untouched(s).tables[0].name
    result = grade(sql + f"\nDELETE FROM {filler} WHERE rowid IN (SELECT rowid FROM {filler} LIMIT 2);", s)
    assert result.rows == 0.0, result.reason  # 2 % of that table's rows lost (0.1 % of all rows)


def test_an_untouched_trigger_rewritten_scores_at_most_the_miss_cap():
    s, sql, kept = _with_fillers("check_repair", triggers=True)
    tr = kept.triggers[0]
    noop = f"\nDROP TRIGGER {tr.name};\nCREATE TRIGGER {tr.name} AFTER UPDATE ON {tr.table} BEGIN SELECT 1; END;"
    result = grade(sql + noop, s)
    assert result.score <= MISS_CAP, result.reason
    assert f"untouched trigger {tr.name} as it was" in result.failed_checks


def test_an_untouched_view_redefined_to_show_nothing_scores_at_most_the_miss_cap():
    s, sql, kept = _with_fillers("check_repair", views=True)
    v = kept.views[0]
    empty = f"\nDROP VIEW {v.name};\nCREATE VIEW {v.name}({', '.join(v.columns)}) AS SELECT {', '.join('NULL' for _ in v.columns)} WHERE 0;"
    result = grade(sql + empty, s)
    assert result.score <= MISS_CAP, result.reason
    assert f"untouched view {v.name} shows the same rows" in result.failed_checks


def test_an_extra_destructive_trigger_scores_at_most_the_miss_cap():
    s, sql = _task("check_repair")
    t = s.params["table"]
    result = grade(sql + f"\nCREATE TRIGGER evil AFTER UPDATE ON {t} BEGIN DELETE FROM {t}; END;", s)
    assert result.score <= MISS_CAP, result.reason
    assert any(name.startswith("no other triggers") for name in result.failed_checks)


def test_an_insert_trigger_standing_in_for_the_checks_scores_at_most_the_miss_cap():
    s, sql = _task("check_repair")
    p, family = s.params, BY_NAME["check_repair"]
    no_checks = _changed(_changed(sql, f" CHECK ({family._qty_check(p)})", ""), f" CHECK ({family._rate_check(p)})", "")
    bad = f"NEW.{p['qty']} < 0" + (f" OR NEW.{p['qty']} > {p['cap']}" if p["cap"] is not None else "")
    guard = f"\nCREATE TRIGGER guard BEFORE INSERT ON {p['table']} WHEN {bad} OR NEW.{p['rate']} < 0 OR NEW.{p['rate']} > 1 BEGIN SELECT RAISE(ABORT, 'x'); END;"
    result = grade(no_checks + guard, s)
    assert result.score <= MISS_CAP, result.reason
    # The trigger refuses bad INSERTs but not UPDATEs: the battery's updates show it.
    assert any(
        f"(UPDATE of a new row to {p['qty']} = " in name and "refused by the target, accepted here" in name
        for name in result.failed_checks
    ), result.failed_checks


@pytest.mark.parametrize("which", ["rate accepts above 2", "qty rejects only the probed values"])
def test_a_check_shaped_to_the_probes_scores_at_most_the_miss_cap(which):
    s, sql = _task("check_repair")
    p, family = s.params, BY_NAME["check_repair"]
    q, r = p["qty"], p["rate"]
    if which == "rate accepts above 2":
        shaped = _changed(sql, f"CHECK ({family._rate_check(p)})", f"CHECK ({r} >= 0 AND ({r} <= 1 OR {r} > 2))")
    else:
        cap_plus = 10_001 if p["cap"] is None else p["cap"] + 1
        shaped = _changed(sql, f"CHECK ({family._qty_check(p)})", f"CHECK ({q} NOT IN (-1, {cap_plus}))")
    result = grade(shaped, s)
    assert result.score <= MISS_CAP, result.reason


@pytest.mark.parametrize(
    "family, old, new",
    [
        (
            "split_column",
            "  created_at TEXT NOT NULL\n);",
            "  created_at TEXT NOT NULL,\n  display_name TEXT GENERATED ALWAYS AS (family_name || ', ' || given_name) VIRTUAL\n);",
        ),
        ("extract_json", "  amount REAL\n);", "  amount REAL,\n  secret TEXT GENERATED ALWAYS AS (payload) STORED\n);"),
    ],
)
def test_an_extra_generated_column_counts_as_an_extra_column(family, old, new):
    s, sql = _task(family)
    result = grade(_changed(sql, old, new), s)
    assert result.score <= MISS_CAP, result.reason
    assert any("has no other columns" in name for name in result.failed_checks)


def test_a_leftover_table_behind_hundreds_of_views_is_still_found():
    s, sql = _task("check_repair")
    t = s.params["table"]
    views = "".join(f"\nCREATE VIEW zz{i} AS SELECT 1;" for i in range(250))
    result = grade(sql + views + f"\nCREATE TABLE {t}_backup AS SELECT * FROM {t};", s)
    assert result.score <= MISS_CAP, result.reason
    assert any(name.startswith("no other tables") for name in result.failed_checks)


def test_hundreds_of_extra_tables_fail_the_check_instead_of_being_cut_off():
    s, sql = _task("check_repair")
    tables = "".join(f"\nCREATE TABLE aaa{i} (x);" for i in range(250))
    result = grade(sql + tables, s)
    assert result.score <= MISS_CAP, result.reason
    assert any(name.startswith("no other tables (found") for name in result.failed_checks)


def test_trimming_tabs_and_nbsp_that_the_rule_keeps_scores_at_most_the_miss_cap():
    s, sql = _task("split_column")
    col = s.params["column"]
    wider = _changed(sql, f"trim(coalesce({col}, ''))", f"trim(coalesce({col}, ''), ' ' || char(9) || char(160))")
    result = grade(wider, s)
    assert result.score <= MISS_CAP, result.reason


def test_typed_columns_written_as_stored_generated_columns_refuse_later_writes_the_target_accepts():
    """Decided with the later-write battery (issue 38): the target states plain columns; a generated
    column has the right values today but refuses every INSERT or UPDATE naming it."""
    s, _ = _task("extract_json")
    p = s.params
    assert (p["table"], [f[0] for f in p["fields"]], p["keep_payload"]) == (
        "audit_events",
        ["user_id", "amount"],
        True,
    ), p  # the SQL below is written for this task
    uid = (
        "CASE WHEN json_valid(payload) AND json_type(payload) = 'object' THEN CASE json_type(payload, '$.user.id') "
        "WHEN 'integer' THEN json_extract(payload, '$.user.id') WHEN 'text' THEN CASE WHEN trim(json_extract(payload, '$.user.id')) <> '' "
        "AND trim(json_extract(payload, '$.user.id')) NOT GLOB '*[^0-9]*' THEN CAST(trim(json_extract(payload, '$.user.id')) AS INTEGER) END END END"
    )
    amount = (
        "CASE WHEN json_valid(payload) AND json_type(payload) = 'object' THEN CASE WHEN json_type(payload, '$.amount') "
        "IN ('integer', 'real') THEN CAST(json_extract(payload, '$.amount') AS REAL) END END"
    )
    sql = f"""CREATE TABLE audit_events__new (id INTEGER PRIMARY KEY, received_at TEXT NOT NULL, payload TEXT,
  user_id INTEGER GENERATED ALWAYS AS ({uid}) STORED, amount REAL GENERATED ALWAYS AS ({amount}) STORED);
INSERT INTO audit_events__new (id, received_at, payload) SELECT id, received_at, payload FROM audit_events;
DROP TABLE audit_events; ALTER TABLE audit_events__new RENAME TO audit_events;
CREATE INDEX idx_audit_events_user_id ON audit_events(user_id);"""
    result = grade(sql, s)
    assert result.rows == 1.0 and result.score <= MISS_CAP, result.reason
    assert any(
        name.startswith("later writes to audit_events.user_id") and "accepted by the target, refused here" in name
        for name in result.failed_checks
    )
