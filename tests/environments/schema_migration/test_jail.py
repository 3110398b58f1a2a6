"""The migration jail: the grader refuses ATTACH, VACUUM INTO, load_extension and schema hacks, and stops runaway queries."""

import sqlite3
from pathlib import Path

import pytest
from schema_migration import jail
from schema_migration.jail import JailReport, Limits


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "scratch" / "heldout.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(100)])
    conn.commit()
    conn.close()
    return path


BUDGET = {"steps": 20_000_000, "read_steps": 20_000_000, "cpu_s": 5.0, "read_cpu_s": 5.0}


def _world(db: Path, tables: tuple[str, ...] = (), battery: dict | None = None, budget: dict | None = None) -> dict:
    return {
        "name": "main",
        "db": db.name,
        "tables": list(tables),
        "views": [],
        "untouched": [],
        "battery": battery,
        "plan": None,
        "budget": budget or BUDGET,
    }


def _child(db: Path, statements: list[str], file_mb: int = 64, **world) -> JailReport:
    """Run the confined child directly, bypassing the parent's statement screening."""
    return jail.run(db.parent, statements, [_world(db, **world)], Limits(), file_mb)[0]


def _run(db: Path, sql: str, **world) -> JailReport:
    statements, refused = jail.prepare(sql)
    return JailReport("refused", error=refused) if refused else _child(db, statements, **world)


def _battery(*statements: str) -> dict:
    """One scenario per statement, reading table t at ids 1 and 1000 after it."""
    objects = [{"name": "t", "kind": "table", "columns": ["id", "v"], "key": "id"}]
    return {"objects": objects, "scenarios": [{"keys": [1, 1000], "steps": [[sql, []]]} for sql in statements]}


def test_attach_is_refused_before_anything_runs(db, tmp_path):
    target = tmp_path / "evil.sqlite"
    report = _run(db, f"ATTACH DATABASE '{target}' AS evil; CREATE TABLE evil.x (a);")
    assert report.status == "refused" and "ATTACH" in report.error
    assert not target.exists()


def test_the_child_itself_denies_attach_and_creates_no_file(db, tmp_path):
    target = tmp_path / "evil.sqlite"
    report = _child(db, [f"ATTACH DATABASE '{target}' AS evil", "CREATE TABLE evil.x (a)"])
    assert report.status == "error" and "not authorized" in report.error
    assert report.unchanged is True
    assert not target.exists()


def test_vacuum_into_is_refused_and_writes_no_file(db, tmp_path):
    target = tmp_path / "copy.sqlite"
    assert _run(db, f"VACUUM INTO '{target}';").status == "refused"
    report = _child(db, [f"VACUUM INTO '{target}'"])
    assert report.status == "error"
    assert not target.exists()


def test_load_extension_cannot_be_called(db, tmp_path):
    report = _child(db, [f"SELECT load_extension('{tmp_path / 'evil.so'}')"])
    assert report.status == "error"
    assert "not authorized" in report.error or "no such function" in report.error


@pytest.mark.parametrize(
    "pragma", ["PRAGMA writable_schema = ON", "PRAGMA ignore_check_constraints = ON", "PRAGMA journal_mode = OFF"]
)
def test_schema_and_journal_pragmas_are_refused(db, pragma):
    report = _run(db, f"{pragma}; UPDATE t SET v = 'x';")
    assert report.status == "error" and "not authorized" in report.error
    assert report.unchanged is True


def test_harmless_pragmas_are_allowed(db):
    report = _run(db, "PRAGMA foreign_keys = OFF; PRAGMA table_info(t); UPDATE t SET v = 'x';")
    assert report.status == "ok"


def test_a_runaway_query_hits_the_step_limit_and_leaves_the_database_unchanged(db):
    runaway = (
        "UPDATE t SET v = 'y'; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;"
    )
    report = _run(db, runaway)
    assert report.status == "error" and report.error.startswith("step limit reached (20,000,000 SQLite VM steps")
    assert report.statement == 2
    assert report.unchanged is True


ROWS_OF = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT x FROM c)"
PAST_ONE_MIB = {
    "zeroblob table": "CREATE TABLE junk AS SELECT zeroblob(100000) AS b FROM " + ROWS_OF.format(n=30),
    "printf rows": "INSERT INTO t (v) SELECT printf('%.*c', 20000, 'x') FROM " + ROWS_OF.format(n=200),
    "every row rewritten": "UPDATE t SET v = zeroblob(30000)",
}


@pytest.mark.parametrize("write", sorted(PAST_ONE_MIB))
def test_a_write_past_the_file_size_limit_names_it_and_leaves_the_database_byte_for_byte_unchanged(db, write):
    before = db.read_bytes()
    report = _child(db, ["UPDATE t SET v = 'changed first'", PAST_ONE_MIB[write]], file_mb=1)
    assert report.status == "error" and report.statement == 2
    assert report.error.startswith("file-size limit reached (1 MiB"), report.error
    assert report.unchanged is True
    assert db.read_bytes() == before  # in fact, not only as reported
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]  # no journal or partial file left behind


def test_later_writes_run_after_the_migration_and_are_undone(db):
    report = _run(
        db,
        "UPDATE t SET v = 'z';",
        battery=_battery("INSERT INTO t VALUES (1000, 'p')", "INSERT INTO t VALUES (1, 'dup')"),
    )
    assert report.status == "ok"
    assert report.battery == [[[True, [], [[1, [[1, "z"], [1000, "p"]]]]]], [[False, [], [[0, [[1, "z"]]]]]]]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*), min(v), max(v) FROM t").fetchone() == (100, "z", "z")


def test_temp_objects_of_the_migration_are_gone_when_the_result_is_read(db):
    fake = "CREATE TEMP TRIGGER no_inserts BEFORE INSERT ON main.t BEGIN SELECT RAISE(ABORT, 'no'); END; CREATE TEMP TABLE scratch (a);"
    report = _run(
        db, fake, tables=("t",), battery=_battery("INSERT INTO t VALUES (1000, 'p')", "INSERT INTO scratch VALUES (1)")
    )
    assert report.status == "ok"
    assert [steps[0][0] for steps in report.battery] == [
        True,
        False,
    ]  # the insert passes; temp.scratch no longer exists
    assert set(report.facts["tables"]) == {"t"}
    assert (report.facts["tables_listed"], report.facts["table_count"], report.facts["trigger_count"]) == (
        [["t", "t"]],
        1,
        0,
    )


def test_a_crash_reports_its_real_cause_naming_the_limit():
    request = {"cpu_s": 9, "memory_mb": 1024, "file_mb": 64}
    assert "hard CPU-time limit (9 CPU-s" in jail.crash_cause(-24, "", request)
    assert "file-size limit (64 MiB)" in jail.crash_cause(-25, "", request)
    assert "out of memory (the address-space limit is 1024 MiB)" in jail.crash_cause(
        1, "Traceback ...\nMemoryError", request
    )
    assert jail.crash_cause(1, "Traceback ...\nKeyError: 'x'", request) == "it exited with status 1: KeyError: 'x'"
