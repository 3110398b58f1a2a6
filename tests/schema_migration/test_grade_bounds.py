"""The grader treats agent SQL as untrusted: bounded parse time, memory, temp disk and CPU work; real crash causes; short reasons free of held-out values."""

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from schema_migration import jail
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import heldout_rows, seeds, spec
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP, REASON_CHARS
from schema_migration.jail import Limits

DEV = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}
HARD_TIMEOUT_S = 240
ISOLATED = """
import json, resource, sys, time
from schema_migration.generate import spec
from schema_migration.grade import grade
seed, sql = json.loads(sys.stdin.read())
start = time.process_time()
result = grade(sql, spec(seed))
print(json.dumps({"score": result.score, "stage": result.stage, "reason": result.reason,
                  "cpu_s": time.process_time() - start,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _task(family: str):
    s = spec(DEV[family])
    return s, BY_NAME[family].migration(s.params)


def _descendants(pid: int) -> list[int]:
    out, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            kids = []
        out += [int(k) for k in kids]
        frontier += [int(k) for k in kids]
    return out


def _deleted_file_bytes(pids: list[int]) -> int:
    """Bytes held in unlinked files (SQLite's temp files) the processes have open."""
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").endswith("(deleted)"):
                    total += os.stat(f"/proc/{pid}/fd/{fd}").st_size
            except OSError:
                pass
    return total


def _grade_isolated(family: str, sql: str) -> dict:
    """Grade in a fresh process under a hard timeout; report its own peak RSS and the peak bytes of
    temp files it and its children held."""
    process = subprocess.Popen(
        [sys.executable, "-c", ISOLATED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps([DEV[family], sql]))
    process.stdin.close()
    peak_temp, deadline = 0, time.monotonic() + HARD_TIMEOUT_S
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"grading did not finish within {HARD_TIMEOUT_S} s")
        peak_temp = max(peak_temp, _deleted_file_bytes([process.pid, *_descendants(process.pid)]))
        time.sleep(0.05)
    out, err = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    assert process.returncode == 0, err[-2000:]
    return {**json.loads(out), "peak_temp_mb": peak_temp / 2**20}


def test_the_child_runs_under_the_memory_cpu_and_file_limits(tmp_path):
    db = tmp_path / "scratch" / "db.sqlite"
    db.parent.mkdir()
    db.touch()
    limits = Limits(cpu_s=7, memory_mb=900, file_mb=33)
    report = jail.run(db, "CREATE TABLE t (a);", [], limits, build=None)
    assert report.status == "ok", report.error
    assert report.limits == {"cpu_s": 7, "memory_bytes": 900 * 2**20, "file_bytes": 33 * 2**20}


def test_a_98_kb_comment_in_a_create_table_is_graded_fast_and_correctly():
    s, sql = _task("split_column")
    t = s.params["table"]
    comment = "/* " + "a " * 49_000 + "*/"
    padded = sql.replace(f"CREATE TABLE {t}__new (", f"CREATE TABLE {t}__new ( {comment}", 1)
    assert len(padded) - len(sql) > 98_000
    before = time.process_time()
    result = grade(padded, s)
    assert time.process_time() - before < 10
    assert result.score == 1.0, result.reason


def test_a_view_computing_a_huge_blob_neither_bloats_the_grader_nor_scores():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    bomb = head + f"CREATE VIEW {p['old']} (id, nm, tel, addr, created) AS SELECT id, zeroblob(400000000), NULL, NULL, NULL FROM {p['new']};"
    out = _grade_isolated("rename_with_view", bomb)
    assert out["maxrss_mb"] < 400, out
    assert out["score"] <= MISS_CAP, out["reason"]
    assert "too big" in out["reason"]


def test_a_stored_huge_blob_is_refused_without_bloating_the_grader():
    s, sql = _task("not_null_backfill")
    bomb = f"{sql}\nUPDATE {s.params['table']} SET customer = zeroblob(200000000) WHERE id = (SELECT min(id) FROM {s.params['table']});"
    out = _grade_isolated("not_null_backfill", bomb)
    assert out["maxrss_mb"] < 400, out
    assert (out["score"], out["stage"]) == (0.0, "error"), out["reason"]
    assert "too big" in out["reason"]


def test_a_view_sort_bomb_uses_no_host_temp_disk():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    many = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) SELECT x FROM c)"
    bomb = head + f"CREATE VIEW {p['old']} AS SELECT n.id, n.* FROM {p['new']} AS n, {many} ORDER BY randomblob(300);"
    out = _grade_isolated("rename_with_view", bomb)
    assert out["peak_temp_mb"] < 1, out
    assert out["maxrss_mb"] < 400, out
    assert out["score"] <= MISS_CAP


def test_a_foreign_key_to_a_view_reports_the_mismatch_not_a_resource_limit():
    s, sql = _task("add_fk_orphans")
    p = s.params
    broken = f"{sql}\nCREATE VIEW parent_view AS SELECT id FROM {p['parent']};\nCREATE TABLE notes (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES parent_view(id));"
    result = grade(broken, s)
    assert result.score == 0.0
    assert "foreign key mismatch" in result.reason, result.reason
    assert "resource limit" not in result.reason


def test_a_trigger_raising_rollback_on_the_probes_is_graded_with_its_real_effect():
    s, sql = _task("check_repair")
    t = s.params["table"]
    result = grade(f"{sql}\nCREATE TRIGGER refuse_all BEFORE INSERT ON {t} BEGIN SELECT RAISE(ROLLBACK, 'no inserts'); END;", s)
    assert result.stage == "checked", result.reason
    assert result.score <= MISS_CAP
    assert any("are accepted" in name for name in result.failed_checks), result.reason
    assert "resource limit" not in result.reason


def _heldout_texts(s) -> set[str]:
    return {v for rows in heldout_rows(s).values() for row in rows for v in row if isinstance(v, str) and len(v) >= 4}


def test_an_error_quoting_every_heldout_row_is_capped_and_redacted():
    s, sql = _task("split_column")
    t, col = s.params["table"], s.params["column"]
    leak = f"{sql.split(';')[0]};\nSELECT json_extract('{{}}', (SELECT group_concat({col}, '|') FROM {t}));"
    result = grade(leak, s)
    assert result.stage == "error"
    assert len(result.reason) <= REASON_CHARS
    assert not [v for v in _heldout_texts(s) if v in result.reason]


def test_a_view_whose_rows_fail_with_a_heldout_value_leaks_nothing_into_the_reason():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    name = dict(p["renames"]).get("nm", "nm")
    view = f"CREATE VIEW {p['old']} (id, nm, tel, addr, created) AS SELECT id, json_extract('{{}}', {name}), NULL, NULL, NULL FROM {p['new']};"
    result = grade(head + view, s)
    assert result.stage == "checked"
    assert "JSON path error" in result.reason, result.reason
    assert len(result.reason) <= REASON_CHARS
    assert not [v for v in _heldout_texts(s) if v in result.reason]


def test_reasons_of_wrong_rows_name_columns_and_quote_no_value():
    s, sql = _task("split_column")
    result = grade(sql.replace(f"trim(coalesce({s.params['column']}, ''))", f"coalesce({s.params['column']}, '')"), s)
    assert result.row_stats is not None and result.row_stats.wrong > 0
    assert f"{s.params['table']}." in result.reason
    assert not [v for v in _heldout_texts(s) if v in result.reason]


def _hogs(n: int, seconds: float) -> list[subprocess.Popen]:
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def test_limits_count_cpu_work_so_scores_do_not_depend_on_machine_load():
    s, sql = _task("unique_dedupe")
    alone = grade(sql, s)
    assert alone.score == 1.0 and alone.steps > 0
    enough = replace(Limits(), steps=alone.steps + 10_000, cpu_s=20)
    too_few = replace(Limits(), steps=alone.steps // 2, cpu_s=20)
    hogs = _hogs(4, HARD_TIMEOUT_S)
    try:
        loaded = [grade(sql, s, limits=enough) for _ in range(2)]
        starved = grade(sql, s, limits=too_few)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert [g.score for g in loaded] == [1.0, 1.0], loaded[0].reason
    assert [g.steps for g in loaded] == [alone.steps, alone.steps]
    assert (starved.score, starved.stage) == (0.0, "error")
    assert "step limit" in starved.reason


def test_a_runaway_view_is_stopped_by_the_step_limit_not_the_clock():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    forever = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)"
    view = f"CREATE VIEW {p['old']} AS SELECT n.* FROM {p['new']} AS n WHERE n.id > (SELECT max(x) FROM {forever});"
    result = {}
    worker = threading.Thread(target=lambda: result.update(g=grade(head + view, s, limits=replace(Limits(), read_steps=50_000_000))))
    worker.start()
    worker.join(HARD_TIMEOUT_S)
    assert not worker.is_alive(), "grading hung"
    g = result["g"]
    assert g.score <= MISS_CAP
    assert "step limit" in g.reason, g.reason
