"""The in-container engine and its rendering: statement splitting, all-or-nothing execute, bounded output, checkpoints."""

import asyncio
import random
import sqlite3
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from sqlite_sandbox import engine, render, toolset
from sqlite_sandbox.state import SandboxConfig, SandboxState
from verifiers.v1.mcp.server import _call_state


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(1, 6)])
    conn.commit()
    conn.close()
    return str(path)


def _count(db: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM t").fetchone()[0]
    finally:
        conn.close()


def test_split_ignores_semicolons_in_strings_comments_and_trigger_bodies():
    sql = (
        "INSERT INTO t VALUES (9, 'a;b'); -- note; here\n"
        "CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE t SET v = ';' WHERE id = new.id; END;\n"
        "/* ; */ SELECT 1"
    )
    parts = engine.split_statements(sql)
    assert len(parts) == 3
    assert parts[1].rstrip().endswith("END;") and parts[2].endswith("SELECT 1")


def _split_at_every_semicolon(sql: str) -> list[str]:
    """The specification: ask SQLite at every semicolon whether the script so far is complete."""
    statements, start, pos = [], 0, sql.find(";")
    while pos >= 0:
        chunk = sql[start : pos + 1]
        if sqlite3.complete_statement(chunk):
            if not engine.is_blank(chunk):
                statements.append(chunk.strip())
            start = pos + 1
        pos = sql.find(";", pos + 1)
    return statements + ([sql[start:].strip()] if not engine.is_blank(sql[start:]) else [])


TOKENS = [";", " ", "\n", "END", "end", "x", "CREATE", "TEMP", "TRIGGER", "BEGIN", "EXPLAIN", "SELECT 1",
          "'a;b'", "'it''s;'", '"END"', "[;]", "`e;`", "-- c;\n", "/* ; END; */", "CASE WHEN 1 THEN 2 END",
          "endx", "$end", "\u00e9nd", "é", "\t", "\x0b"]  # fmt: skip


@pytest.mark.parametrize("seed", range(300))
def test_split_agrees_with_asking_sqlite_at_every_semicolon(seed):
    rng = random.Random(seed)
    sql = " ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 40)))
    assert engine.split_statements(sql) == _split_at_every_semicolon(sql), sql


@pytest.mark.parametrize("body", [";", "SELECT 1;", "x END;", "; END x;"])
def test_split_asks_sqlite_at_most_twice_per_statement_so_a_trigger_of_semicolons_is_linear(monkeypatch, body):
    """A 100 kB trigger body of bare semicolons took 7.3 CPU-s when every semicolon asked SQLite."""
    calls = []
    complete = sqlite3.complete_statement
    monkeypatch.setattr(engine.sqlite3, "complete_statement", lambda chunk: calls.append(len(chunk)) or complete(chunk))
    sql = "CREATE TRIGGER g AFTER INSERT ON t BEGIN " + body * (99_000 // len(body)) + " SELECT 1; END; SELECT 2;"
    statements = engine.split_statements(sql)
    assert len(statements) == 2 and statements[1] == "SELECT 2;"
    assert len(calls) <= 2 * len(statements) + 1, len(calls)


def test_blank_scripts_split_into_nothing():
    assert engine.split_statements(" ;; -- only a comment\n /* x */ ") == []


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("BEGIN", engine.IGNORED), ("begin immediate transaction", engine.IGNORED), ("COMMIT", engine.IGNORED),
        ("END TRANSACTION", engine.IGNORED), ("ROLLBACK", engine.REFUSED), ("ROLLBACK TO sp", engine.PLAIN),
        ("rollback transaction to savepoint sp", engine.PLAIN), ("ATTACH 'x' AS y", engine.REFUSED),
        ("DETACH y", engine.REFUSED), ("VACUUM INTO 'x'", engine.REFUSED), ("-- c\nSELECT 1", engine.PLAIN),
    ],
)  # fmt: skip
def test_statements_are_classified_for_transaction_control(statement, kind):
    assert engine.classify(statement) == kind


def test_execute_commits_every_statement_and_reports_rows_and_changes(db):
    reply = engine.execute(db, "INSERT INTO t VALUES (10, 'x'); SELECT id, v FROM t WHERE id >= 5 ORDER BY id;")
    assert reply["ok"]
    assert reply["results"][0]["changes"] == 1
    assert reply["results"][1]["rows"] == [[5, "v5"], [10, "x"]]
    assert _count(db) == 6


def test_a_failing_statement_rolls_back_the_whole_call(db):
    before = Path(db).read_bytes()
    reply = engine.execute(db, "DELETE FROM t; INSERT INTO t VALUES (1, 'a'); INSERT INTO t VALUES (1, 'dup');")
    assert not reply["ok"]
    assert reply["statement"] == 3 and "UNIQUE" in reply["error"]
    assert Path(db).read_bytes() == before


def test_begin_and_commit_are_skipped_and_a_bare_rollback_is_refused(db):
    ok = engine.execute(db, "BEGIN; UPDATE t SET v = 'u'; COMMIT;")
    assert ok["ok"] and ok["ignored"] == [1, 3]
    refused = engine.execute(db, "UPDATE t SET v = 'w'; ROLLBACK;")
    assert not refused["ok"] and "ROLLBACK" in refused["error"]
    assert sqlite3.connect(db).execute("SELECT DISTINCT v FROM t").fetchall() == [("u",)]


def test_results_are_bounded_and_the_rendering_says_it_cut_them(db):
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x, printf('%.500c', 'a') FROM c"
    reply = engine.execute(db, sql)
    assert len(reply["results"][0]["rows"]) == engine.ROW_LIMIT and reply["results"][0]["truncated"]
    text = render.execute_result(reply, max_chars=3000)
    assert render.TRUNCATED in text
    assert len(text) < 4000
    assert "…[500 chars]" in text


def test_a_runaway_query_is_cancelled_by_the_deadline(db):
    reply = engine.execute(
        db,
        "UPDATE t SET v = 'z'; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;",
        deadline_s=0.5,
    )
    assert not reply["ok"] and "cancelled" in reply["error"]
    assert sqlite3.connect(db).execute("SELECT count(*) FROM t WHERE v = 'z'").fetchone()[0] == 0


def test_checkpoint_and_restore_bring_back_the_saved_database(db, tmp_path):
    saved = str(tmp_path / "ck" / "a.sqlite")
    assert engine.checkpoint(db, saved)["ok"]
    engine.execute(db, "DELETE FROM t")
    assert _count(db) == 0
    assert engine.restore(db, saved)["ok"]
    assert _count(db) == 5


def test_a_missing_database_is_reported_not_created(tmp_path):
    missing = str(tmp_path / "gone.sqlite")
    reply = engine.handle({"op": "execute", "db": missing, "sql": "SELECT 1"})
    assert not reply["ok"] and "missing" in reply["error"]
    assert not Path(missing).exists()


def test_schema_lists_objects_with_row_counts(db):
    engine.execute(db, "CREATE INDEX t_v ON t(v); CREATE VIEW tv AS SELECT v FROM t;")
    text = render.schema_result(engine.schema(db))
    assert "CREATE TABLE t" in text and "-- 5 rows" in text
    assert "CREATE INDEX t_v" in text and "CREATE VIEW tv" in text


def _wide(db: str, columns: int, name_len: int) -> str:
    names = [f"c{k:04d}_" + "x" * name_len for k in range(columns)]
    engine.execute(db, f"CREATE TABLE wide ({', '.join(n + ' TEXT' for n in names)}); INSERT INTO wide DEFAULT VALUES;")
    return "SELECT * FROM wide"


@pytest.mark.parametrize(("columns", "name_len"), [(400, 200), (2000, 30), (30, 3)])
def test_the_output_cap_counts_column_names_headers_and_notes(db, columns, name_len):
    # One call returned 90,437 characters through a 6,000 cap: only row text was counted.
    sql = _wide(db, columns, name_len)
    reply = engine.execute(db, f"BEGIN; {sql}; {sql}; SELECT 1; COMMIT;")
    text = render.execute_result(reply, max_chars=6000)
    assert len(text) <= 6000
    assert text.endswith("committed 5 statement(s).") and "were ignored" in text
    if columns * name_len > 6000:
        assert f"columns ({columns}, " in text and render.TRUNCATED in text


@pytest.mark.slow
def test_many_small_statements_and_ignored_ones_stay_within_the_cap(db):
    reply = engine.execute(db, "BEGIN; " + "SELECT id, v FROM t; " * 3000 + "COMMIT; " * 500)
    text = render.execute_result(reply, max_chars=6000)
    assert len(text) <= 6000
    assert "more statement result(s) not shown]" in text and "and 491 more were ignored" in text


@pytest.mark.parametrize("cap", [1000, 3000, 6000, 20000])
def test_results_that_fit_are_shown_whole_and_others_never_pass_the_cap(db, cap):
    small = render.execute_result(engine.execute(db, "SELECT id, v FROM t ORDER BY id"), max_chars=cap)
    assert '[5, "v5"]' in small and "(5 rows)" in small and render.TRUNCATED not in small
    big = engine.execute(
        db,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 60) SELECT x, printf('%.190c', 'a') AS "
        + "n" * 300
        + " FROM c",
    )
    assert len(render.execute_result(big, max_chars=cap)) <= cap


def test_a_long_error_message_is_cut_to_the_cap(db):
    reply = engine.execute(db, f"SELECT {'q' * 50_000} FROM t")
    assert not reply["ok"] and len(reply["error"]) > 50_000
    text = render.execute_error(reply, max_chars=6000)
    assert len(text) <= 6000 and text.startswith("SQL error at statement 1 of 1") and "rolled back" in text


class _LocalToolset(toolset.SqliteSandboxToolset):
    async def _engine(self, request: dict) -> dict:
        return engine.handle({"db": self.state.db_path, **request})


def test_the_execute_tool_returns_at_most_max_output_chars_budget_line_included(db):
    sql = _wide(db, 600, 120)
    tools = _LocalToolset(SandboxConfig())
    state = SandboxState(db_path=db)
    token = _call_state.set(state)
    try:
        text = asyncio.run(tools.execute(sql=f"{sql}; {sql}"))
        with pytest.raises(ToolError) as raised:
            asyncio.run(tools.execute(sql=f"SELECT {'q' * 90_000} FROM t"))
    finally:
        _call_state.reset(token)
    cap = SandboxConfig().max_output_chars
    assert len(text) <= cap and text.endswith("[statements used: 1 of 30]")
    assert len(str(raised.value)) <= cap and str(raised.value).endswith("[statements used: 2 of 30]")
