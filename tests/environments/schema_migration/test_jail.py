"""The migration jail: the grader refuses ATTACH, VACUUM INTO, load_extension and schema hacks, and stops runaway queries."""

import json
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from schema_migration import jail
from schema_migration.jail import CHILD, Limits


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


def _child(db: Path, statements: list[str]) -> dict:
    """Run the confined child directly, bypassing the parent's statement screening."""
    limits = Limits().for_rows(0)
    request = {
        "db": db.name, "statements": statements, "probes": [], "steps": limits.steps, "read_steps": limits.read_steps,
        "cpu_s": 20, "memory_mb": 1024, "file_mb": 64, "length_mb": 8,
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(CHILD)], input=pickle.dumps(request) + pickle.dumps(None), capture_output=True, cwd=db.parent, timeout=60
    )
    return json.loads(done.stdout)


def test_attach_is_refused_before_anything_runs(db, tmp_path):
    target = tmp_path / "evil.sqlite"
    report = jail.run(db, f"ATTACH DATABASE '{target}' AS evil; CREATE TABLE evil.x (a);", [])
    assert report.status == "refused" and "ATTACH" in report.error
    assert not target.exists()


def test_the_child_itself_denies_attach_and_creates_no_file(db, tmp_path):
    target = tmp_path / "evil.sqlite"
    report = _child(db, [f"ATTACH DATABASE '{target}' AS evil", "CREATE TABLE evil.x (a)"])
    assert report["status"] == "error" and "not authorized" in report["error"]
    assert report["unchanged"] is True
    assert not target.exists()


def test_vacuum_into_is_refused_and_writes_no_file(db, tmp_path):
    target = tmp_path / "copy.sqlite"
    assert jail.run(db, f"VACUUM INTO '{target}';", []).status == "refused"
    report = _child(db, [f"VACUUM INTO '{target}'"])
    assert report["status"] == "error"
    assert not target.exists()


def test_load_extension_cannot_be_called(db, tmp_path):
    report = _child(db, [f"SELECT load_extension('{tmp_path / 'evil.so'}')"])
    assert report["status"] == "error"
    assert "not authorized" in report["error"] or "no such function" in report["error"]


@pytest.mark.parametrize("pragma", ["PRAGMA writable_schema = ON", "PRAGMA ignore_check_constraints = ON", "PRAGMA journal_mode = OFF"])
def test_schema_and_journal_pragmas_are_refused(db, pragma):
    report = jail.run(db, f"{pragma}; UPDATE t SET v = 'x';", [])
    assert report.status == "error" and "not authorized" in report.error
    assert report.unchanged is True


def test_harmless_pragmas_are_allowed(db):
    report = jail.run(db, "PRAGMA foreign_keys = OFF; PRAGMA table_info(t); UPDATE t SET v = 'x';", [])
    assert report.status == "ok"


def test_a_runaway_query_hits_the_step_limit_and_leaves_the_database_unchanged(db):
    runaway = "UPDATE t SET v = 'y'; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;"
    report = jail.run(db, runaway, [], Limits(steps=20_000_000))
    assert report.status == "error" and report.error == "step limit reached (20,000,000 SQLite VM steps)"
    assert report.statement == 2
    assert report.unchanged is True


def test_probes_run_after_the_migration_and_are_undone(db):
    report = jail.run(db, "UPDATE t SET v = 'z';", ["INSERT INTO t VALUES (1000, 'p')", "INSERT INTO t VALUES (1, 'dup')"])
    assert report.status == "ok"
    assert report.probes == [False, True]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*), min(v), max(v) FROM t").fetchone() == (100, "z", "z")


def test_temp_objects_of_the_migration_are_gone_when_the_result_is_read(db):
    fake = "CREATE TEMP TRIGGER no_inserts BEFORE INSERT ON main.t BEGIN SELECT RAISE(ABORT, 'no'); END; CREATE TEMP TABLE scratch (a);"
    report = jail.run(db, fake, ["INSERT INTO t VALUES (1000, 'p')", "INSERT INTO scratch VALUES (1)"], wanted=jail.Wanted(tables=("t",)))
    assert report.status == "ok"
    assert report.probes == [False, True]  # the insert passes; temp.scratch no longer exists
    assert set(report.facts["tables"]) == {"t"}
    assert (report.facts["tables_listed"], report.facts["table_count"], report.facts["trigger_count"]) == ([["t", "t"]], 1, 0)


def test_a_crash_reports_its_real_cause():
    assert "CPU-time limit" in jail.crash_cause(-24, "", Limits())
    assert "out of memory" in jail.crash_cause(1, "Traceback ...\nMemoryError", Limits())
    assert jail.crash_cause(1, "Traceback ...\nKeyError: 'x'", Limits()) == "it exited with status 1: KeyError: 'x'"
