"""Grader: reference migrations score 1 on held-out rows; known-bad migrations fail the check they break."""

import pytest
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import seeds, spec, visible_rows
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP
from schema_migration.policies import hard_coded_migration, naive_migration
from schema_migration.prompt import PromptSpec

DEV = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}


def _task(family: str):
    s = spec(DEV[family])
    return s, BY_NAME[family].migration(s.params)


@pytest.mark.parametrize("family", sorted(DEV))
def test_each_familys_reference_migration_scores_one_on_heldout_rows(family):
    s, sql = _task(family)
    result = grade(sql, s)
    assert result.score == 1.0, result.reason
    assert result.stage == "checked"


@pytest.mark.parametrize("family", ["split_column", "unique_dedupe", "check_repair"])
def test_reference_migration_also_scores_one_on_a_second_seed_and_the_visible_rows(family):
    seed = DEV[family] + len(FAMILIES)
    s = spec(seed)
    sql = BY_NAME[family].migration(s.params)
    assert grade(sql, s).score == 1.0
    assert grade(sql, s, visible_rows(s)).score == 1.0


@pytest.mark.parametrize("family", sorted(DEV))
def test_a_migration_that_changes_nothing_scores_zero_on_both_gates(family):
    s, _ = _task(family)
    result = grade("SELECT 1;", s)
    assert result.score == 0.0 and result.stage == "checked"
    assert result.schema <= MISS_CAP and result.rows == 0.0


def test_begin_and_commit_in_a_migration_are_ignored():
    s, sql = _task("merge_columns")
    result = grade(f"BEGIN TRANSACTION;\n{sql}\nCOMMIT;", s)
    assert result.score == 1.0, result.reason


def test_a_bare_rollback_in_the_migration_is_refused():
    s, sql = _task("merge_columns")
    result = grade(f"{sql}\nROLLBACK;", s)
    assert (result.score, result.stage) == (0.0, "refused")
    assert "ROLLBACK" in result.reason


def test_a_migration_that_drops_rows_loses_them_and_is_capped():
    s, sql = _task("not_null_backfill")
    table = s.touched[0]
    result = grade(f"{sql}\nDELETE FROM {table} WHERE id % 10 = 0;", s)
    assert result.row_stats is not None and result.row_stats.lost > 0
    assert result.score <= MISS_CAP
    assert "lost" in result.reason


def test_a_migration_with_the_wrong_column_type_fails_the_affinity_check():
    s, sql = _task("change_type_cents")
    column = s.params["target"]
    result = grade(sql.replace(f"{column} INTEGER", f"{column} TEXT", 1), s)
    assert any("affinity" in name and column in name for name in result.failed_checks), result.reason
    assert result.score <= MISS_CAP


def test_a_foreign_key_migration_that_leaves_orphans_fails_integrity():
    s, _ = _task("add_fk_orphans")
    params = {**s.params}
    table = BY_NAME["add_fk_orphans"].schemas(params)[1].table(params["child"])
    from schema_migration.families.base import rebuild

    sql = rebuild(table, {}, params["child"])  # declares the FK but keeps every orphan
    result = grade(sql, s)
    assert (result.score, result.stage) == (0.0, "integrity")
    assert "foreign_key_check" in result.reason


def test_a_check_constraint_that_is_missing_fails_the_later_writes():
    s, sql = _task("check_repair")
    qty = s.params["qty"]
    weakened = sql.replace(f" CHECK ({BY_NAME['check_repair']._qty_check(s.params)})", "", 1)
    assert weakened != sql
    result = grade(weakened, s)
    assert any(name.startswith(f"later writes to {s.params['table']}.{qty} ") for name in result.failed_checks), (
        result.reason
    )
    assert 0 < result.score <= MISS_CAP


def test_a_migration_that_hard_codes_the_visible_rows_passes_them_but_fails_the_heldout_rows():
    s, _ = _task("split_column")
    block = PromptSpec(s.family, s.params, s.source, s.target, s.touched, "/app/db.sqlite")
    visible = visible_rows(s)
    sql = hard_coded_migration(block, {name: visible[name] for name in s.touched})
    assert grade(sql, s, visible).score == 1.0
    heldout = grade(sql, s, heldout_rows(s, 1000))
    assert heldout.score <= 0.05
    assert heldout.row_stats is not None and heldout.row_stats.lost > 0


def test_a_naive_copy_without_the_rules_scores_low():
    s, _ = _task("extract_json")
    block = PromptSpec(s.family, s.params, s.source, s.target, s.touched, "/app/db.sqlite")
    result = grade(naive_migration(block), s)
    assert result.stage == "checked" and result.score < 0.3
    # Every structural requirement holds; what fails is the rules' values (classes, rows).
    assert result.failed_checks and all(name.startswith("value class") for name in result.failed_checks), (
        result.failed_checks
    )


def test_a_migration_that_fails_midway_leaves_the_database_unchanged_and_scores_zero():
    s, sql = _task("split_column")
    result = grade(f"{sql}\nINSERT INTO no_such_table VALUES (1);\nSELECT 1;", s)
    assert (result.score, result.stage) == (0.0, "error")
    assert result.unchanged_after_error is True
    assert "no_such_table" in result.reason and "left unchanged" in result.reason


def test_a_compatibility_view_over_a_dropped_table_is_graded_not_crashed():
    s, sql = _task("rename_with_view")
    old = s.params["old"]
    head = sql[: sql.index("CREATE VIEW")]
    broken = f"{head}CREATE TABLE helper (id, nm, tel, addr, created);\nCREATE VIEW {old} AS SELECT * FROM helper;\nDROP TABLE helper;"
    result = grade(broken, s)
    assert result.stage == "checked"
    assert result.row_stats is not None and "no such table" in result.row_stats.errors[old]
    assert result.score <= MISS_CAP


def test_a_migration_that_is_not_sql_scores_zero_with_the_error():
    s, _ = _task("split_column")
    result = grade("this is not sql;", s)
    assert (result.score, result.stage) == (0.0, "error")
    assert "syntax error" in result.reason
