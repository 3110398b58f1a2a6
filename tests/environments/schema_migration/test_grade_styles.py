"""Correct migrations written differently from the reference (in place, 12-step, CTEs, UPDATE ... FROM, ->>, iif, UNIQUE in any form) score 1.0."""

import pytest
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import seeds, spec
from schema_migration.grade import grade

pytestmark = pytest.mark.slow  # sweeps of graded migrations: > 1 s of CPU each module

DEV = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}


def _task(family: str):
    s = spec(DEV[family])
    return s, BY_NAME[family].migration(s.params)


def _graded_one(sql: str, s) -> None:
    result = grade(sql, s)
    assert result.score == 1.0, result.reason


def test_split_column_in_place_with_a_cte_update_from_and_drop_column():
    s, _ = _task("split_column")
    p = s.params
    t, first, last, col = p["table"], p["first"], p["last"], p["column"]
    assert p["style"] == "last_comma_first"
    _graded_one(
        f"""
        ALTER TABLE {t} ADD COLUMN {first} TEXT NOT NULL DEFAULT '';
        ALTER TABLE {t} ADD COLUMN {last} TEXT NOT NULL DEFAULT '';
        WITH v AS (SELECT id, trim(coalesce({col}, '')) AS v FROM {t}),
             c AS (SELECT id, v, instr(v, ',') AS at FROM v)
        UPDATE {t} SET {first} = iif(c.at > 0, trim(substr(c.v, c.at + 1)), c.v),
                       {last} = iif(c.at > 0, trim(substr(c.v, 1, c.at - 1)), '')
          FROM c WHERE c.id = {t}.id;
        ALTER TABLE {t} DROP COLUMN {col};
        """,
        s,
    )


def test_check_repair_by_the_twelve_step_recipe_with_named_table_checks_and_savepoints():
    s, _ = _task("check_repair")
    p = s.params
    t, q, r = p["table"], p["qty"], p["rate"]
    family = BY_NAME["check_repair"]
    qty = f"max({q}, 0)" if p["cap"] is None else f"min(max({q}, 0), {p['cap']})"
    percent = f"WHEN {r} > 1 AND {r} <= 100 THEN {r} / 100.0 " if p["percent"] else ""
    _graded_one(
        f"""
        PRAGMA foreign_keys = OFF;
        SAVEPOINT rebuild;
        CREATE TABLE new_{t} (
          id INTEGER PRIMARY KEY,
          name TEXT NOT NULL,
          {q} INTEGER NOT NULL,
          {r} REAL,
          updated_at TEXT,
          CONSTRAINT qty_in_range CHECK ({family._qty_check(p)}),
          CONSTRAINT rate_in_range CHECK ({family._rate_check(p)})
        );
        INSERT INTO new_{t} (id, name, {q}, {r}, updated_at)
          SELECT id, name, {qty}, CASE WHEN {r} < 0 THEN 0.0 {percent}WHEN {r} > 1 THEN 1.0 ELSE {r} END, updated_at FROM {t};
        DROP TABLE {t};
        ALTER TABLE new_{t} RENAME TO {t};
        CREATE INDEX any_name ON {t}(name);
        RELEASE rebuild;
        PRAGMA foreign_key_check;
        PRAGMA foreign_keys = ON;
        """,
        s,
    )


@pytest.mark.parametrize("form", ["inline", "next line", "table constraint", "unique index"])
def test_unique_dedupe_accepts_unique_in_every_form(form):
    s, sql = _task("unique_dedupe")
    p = s.params
    t, col = p["table"], p["column"]
    index_line = next(line for line in sql.splitlines() if line.startswith("CREATE UNIQUE INDEX"))
    if form == "unique index":
        _graded_one(sql.replace(index_line, f"CREATE UNIQUE INDEX another_name ON {t} ({col});"), s)
        return
    column = {"inline": f"{col} VARCHAR(64) UNIQUE", "next line": f"{col} TEXT\n    UNIQUE", "table constraint": f"{col} TEXT"}[form]
    tail = ",\n  UNIQUE ({col})".format(col=col) if form == "table constraint" else ""
    rebuild = f"""
        CREATE TABLE {t}_next (
          id INTEGER PRIMARY KEY,
          {column},
          display_name TEXT,
          joined_on TEXT{tail}
        );
        INSERT INTO {t}_next SELECT * FROM {t};
        DROP TABLE {t};
        ALTER TABLE {t}_next RENAME TO {t};
    """
    _graded_one(sql.replace(index_line, rebuild), s)


def test_cents_in_place_with_update_from_and_iif():
    s, sql = _task("change_type_cents")
    p = s.params
    t, col, target = p["table"], p["column"], p["target"]
    clean = sql[sql.index("(SELECT *, ") + len("(SELECT *, ") : sql.index(" AS clean FROM")]
    empty = "0" if p["empty"] == "zero" else "NULL"
    null = " NOT NULL DEFAULT 0" if p["empty"] == "zero" else ""
    _graded_one(
        f"""
        ALTER TABLE {t} ADD COLUMN {target} INTEGER{null};
        UPDATE {t} SET {target} = iif(c.clean IS NULL OR c.clean = '' OR c.clean GLOB '*[^0-9.-]*', {empty},
                                      CAST(round(CAST(c.clean AS REAL) * 100) AS INTEGER))
          FROM (SELECT id, {clean} AS clean FROM {t}) AS c WHERE c.id = {t}.id;
        ALTER TABLE {t} DROP COLUMN {col};
        """,
        s,
    )


def test_json_fields_with_the_arrow_operator():
    s, sql = _task("extract_json")
    for _, path, _ in s.params["fields"]:
        sql = sql.replace(f"json_extract(payload, '{path}')", f"(payload ->> '{path}')")
    assert "->>" in sql
    _graded_one(sql, s)


def test_rename_with_a_view_that_lists_its_columns():
    s, sql = _task("rename_with_view")
    p = s.params
    mapping = dict(p["renames"])
    old_cols = ("id", "nm", "tel", "addr", "created")
    head = sql[: sql.index("CREATE VIEW")]
    view = f"CREATE VIEW {p['old']} ({', '.join(old_cols)}) AS SELECT {', '.join(mapping.get(c, c) for c in old_cols)} FROM {p['new']};"
    _graded_one(head + view, s)


def test_a_foreign_key_declared_as_a_table_constraint_without_a_column():
    s, sql = _task("add_fk_orphans")
    p = s.params
    fk, par = p["fk"], p["parent"]
    sql = sql.replace(f"{fk} INTEGER REFERENCES {par}(id),", f"{fk} INTEGER,")
    sql = sql.replace("  amount REAL\n);", f"  amount REAL,\n  FOREIGN KEY ({fk}) REFERENCES {par}\n);", 1)
    assert f"FOREIGN KEY ({fk})" in sql
    _graded_one(sql, s)


def test_hundreds_of_harmless_views_before_the_migration_do_not_hide_the_target():
    s, sql = _task("check_repair")
    _graded_one("".join(f"CREATE VIEW aaa{i} AS SELECT 1;\n" for i in range(250)) + sql, s)


def test_typed_columns_written_as_stored_generated_columns_count_as_the_columns():
    s, _ = _task("extract_json")
    p = s.params
    assert (p["table"], [f[0] for f in p["fields"]], p["keep_payload"]) == ("audit_events", ["user_id", "amount"], True), p  # the SQL below is written for this task
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
    _graded_one(sql, s)
