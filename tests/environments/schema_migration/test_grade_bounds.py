"""The grader treats agent SQL as untrusted: bounded parse time, memory, temp disk and CPU work; real crash causes; short reasons free of held-out values."""

import json
import re
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
from schema_migration.generate import seeds, spec
from schema_migration.heldout import key as heldout_key
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP, REASON_CHARS
from schema_migration import budget
from schema_migration.budget import Limits
from schema_migration.prepared import prepared

pytestmark = pytest.mark.slow  # graded hostile migrations: > 1 s of CPU each
DEV = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}
HARD_TIMEOUT_S = 240
# Peak RSS is VmHWM of this process's own memory map: ru_maxrss would carry over, through fork
# and exec, the RSS of the pytest worker that started it (~455 MB late in a whole-suite run).
ISOLATED = """
import json, re, resource, sys, time
from pathlib import Path
from schema_migration.generate import spec
from schema_migration.grade import grade
seed, sql = json.loads(sys.stdin.read())
start = time.process_time()
result = grade(sql, spec(seed))
children = resource.getrusage(resource.RUSAGE_CHILDREN)
hwm_kb = int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
print(json.dumps({"score": result.score, "stage": result.stage, "reason": result.reason,
                  "cpu_s": time.process_time() - start, "child_cpu_s": children.ru_utime + children.ru_stime,
                  "maxrss_mb": hwm_kb / 1024}))
"""
RSS_BOUND_MB = 400
"""The grading process's own peak RSS: ~220 MB for a reference migration, nearly all imports
(`schema_migration/__init__` pulls in verifiers, `sqlite_sandbox` its server), however loaded the
machine and however big the pytest worker; the bombs this bounds took 1.5-2.8 GB."""


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
        [sys.executable, "-c", ISOLATED],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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


def test_the_child_runs_under_the_cpu_memory_and_file_limits(tmp_path):
    db = tmp_path / "world0.sqlite"
    db.touch()
    budget = {"steps": 10**6, "read_steps": 10**6, "cpu_s": 1.0, "read_cpu_s": 1.0}
    world = {
        "name": "main",
        "db": db.name,
        "tables": [],
        "views": [],
        "untouched": [],
        "battery": None,
        "plan": None,
        "budget": budget,
    }
    [report] = jail.run(tmp_path, ["CREATE TABLE t (a)"], [world], Limits(cpu_s=7, memory_mb=900), 33)
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
    bomb = (
        head
        + f"CREATE VIEW {p['old']} (id, nm, tel, addr, created) AS SELECT id, zeroblob(400000000), NULL, NULL, NULL FROM {p['new']};"
    )
    out = _grade_isolated("rename_with_view", bomb)
    assert out["maxrss_mb"] < RSS_BOUND_MB, out
    assert out["score"] <= MISS_CAP, out["reason"]
    assert "too big" in out["reason"]


def test_a_stored_huge_blob_is_refused_without_bloating_the_grader():
    s, sql = _task("not_null_backfill")
    bomb = f"{sql}\nUPDATE {s.params['table']} SET customer = zeroblob(200000000) WHERE id = (SELECT min(id) FROM {s.params['table']});"
    out = _grade_isolated("not_null_backfill", bomb)
    assert out["maxrss_mb"] < RSS_BOUND_MB, out
    assert (out["score"], out["stage"]) == (0.0, "error"), out["reason"]
    assert "too big" in out["reason"]


@pytest.mark.slow
def test_a_view_sort_bomb_uses_no_host_temp_disk():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    many = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) SELECT x FROM c)"
    bomb = head + f"CREATE VIEW {p['old']} AS SELECT n.id, n.* FROM {p['new']} AS n, {many} ORDER BY randomblob(300);"
    out = _grade_isolated("rename_with_view", bomb)
    assert out["peak_temp_mb"] < 1, out
    assert out["maxrss_mb"] < RSS_BOUND_MB, out
    assert out["score"] <= MISS_CAP


def test_a_foreign_key_to_a_view_reports_the_mismatch_not_a_resource_limit():
    s, sql = _task("add_fk_orphans")
    p = s.params
    broken = f"{sql}\nCREATE VIEW parent_view AS SELECT id FROM {p['parent']};\nCREATE TABLE notes (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES parent_view(id));"
    result = grade(broken, s)
    assert result.score == 0.0
    assert "foreign key mismatch" in result.reason, result.reason
    assert "resource limit" not in result.reason


def test_a_trigger_raising_rollback_on_later_writes_is_graded_with_its_real_effect():
    s, sql = _task("check_repair")
    t = s.params["table"]
    result = grade(
        f"{sql}\nCREATE TRIGGER refuse_all BEFORE INSERT ON {t} BEGIN SELECT RAISE(ROLLBACK, 'no inserts'); END;", s
    )
    assert result.stage == "checked", result.reason
    assert result.score <= MISS_CAP
    assert any(
        name.startswith("later writes to") and "accepted by the target, refused here" in name
        for name in result.failed_checks
    ), result.reason
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_runaway_view_is_stopped_by_the_step_limit_not_the_clock():
    s, sql = _task("rename_with_view")
    p = s.params
    head = sql[: sql.index("CREATE VIEW")]
    forever = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)"
    view = f"CREATE VIEW {p['old']} AS SELECT n.* FROM {p['new']} AS n WHERE n.id > (SELECT max(x) FROM {forever});"
    result = {}
    # 10M steps: ~0.25 CPU-s here, far under the read's CPU budget (at least 2.5 CPU-s), so the step limit fires
    # first even on a loaded machine; 50M took ~1 CPU-s, close enough for slow CPU-s to meet the clock first.
    worker = threading.Thread(
        target=lambda: result.update(g=grade(head + view, s, limits=replace(Limits(), read_steps=10_000_000)))
    )
    worker.start()
    worker.join(HARD_TIMEOUT_S)
    assert not worker.is_alive(), "grading hung"
    g = result["g"]
    assert g.score <= MISS_CAP
    assert "step limit" in g.reason, g.reason


# --- Round 2: the adversary's leaks, slow spins and a flaky memory bound. ---


@pytest.mark.slow
def test_the_grading_processs_peak_rss_is_measured_without_the_parents_memory():
    ballast = bytearray(600 * 2**20)  # this (pytest) process grows past the bound, as a late worker does
    ballast[::4096] = b"x" * len(ballast[::4096])
    s, sql = _task("check_repair")
    out = _grade_isolated("check_repair", sql)
    del ballast
    assert out["score"] == 1.0, out["reason"]
    assert out["maxrss_mb"] < RSS_BOUND_MB, out


def _heldout_digit_runs(s) -> set[str]:
    return {
        run for rows in heldout_rows(s).values() for row in rows for v in row for run in re.findall(r"\d{4,}", str(v))
    }


@pytest.mark.parametrize(
    "family, leak",
    [
        ("check_repair", "SELECT json_extract('{{}}', '$' || (SELECT group_concat({qty} || ':' || id) FROM {table}));"),
        ("check_repair", "SELECT json_extract('{{}}', '$' || (SELECT upper(group_concat(name, '|')) FROM {table}));"),
        (
            "split_column",
            "SELECT json_extract('{{}}', '$' || (SELECT group_concat(substr({column}, 2), '|') FROM {table}));",
        ),
    ],
)
def test_an_error_built_from_heldout_values_quotes_none_of_them(family, leak):
    s, _ = _task(family)
    result = grade(leak.format(**s.params), s)
    assert result.stage == "error", result.reason
    quoted = {v[1:] for v in _heldout_texts(s)} | {v.upper() for v in _heldout_texts(s)} | _heldout_texts(s)
    assert not [v for v in quoted if len(v) >= 4 and v in result.reason], result.reason
    assert not set(re.findall(r"\d{4,}", result.reason)) & _heldout_digit_runs(s), result.reason


@pytest.mark.parametrize("where", ["migration", "view read at check time"])
@pytest.mark.slow
def test_a_hostile_spin_ends_within_ten_cpu_seconds_at_the_default_rows(where):
    s, sql = _task("rename_with_view")
    forever = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c)"
    if where == "migration":
        spun = f"{sql}\nSELECT {forever};"
    else:
        head = sql[: sql.index("CREATE VIEW")]
        spun = head + f"CREATE VIEW {s.params['old']} AS SELECT n.* FROM {s.params['new']} AS n WHERE n.id > {forever};"
    out = _grade_isolated("rename_with_view", spun)
    assert out["score"] <= MISS_CAP, out["reason"]
    # Which budget fires first depends on load (the read spends 1.85 to 2.55 CPU-s before its step budget,
    # against a 2.5 CPU-s read budget); either one is the property, the hard cap's SIGXCPU is not.
    assert re.search(r"\b(step|CPU) limit reached \(", out["reason"]), out["reason"]
    assert out["cpu_s"] + out["child_cpu_s"] < 10, out


def test_the_budget_is_a_multiple_of_the_references_cost_with_a_quadratic_floor():
    small = budget.Cost(steps=100_000, read_steps=200_000, cpu_s=0.01, read_cpu_s=0.02, file_bytes=300_000, rows=2000)
    got = budget.spend(small, Limits())
    assert got.steps == budget.QUADRATIC * 2000**2 and got.read_steps == budget.QUADRATIC * 2000**2
    assert (got.cpu_s, got.read_cpu_s) == (budget.CPU_FLOOR_S, budget.READ_FLOOR_S)
    costly = budget.Cost(steps=10**9, read_steps=10**9, cpu_s=1.0, read_cpu_s=1.0, file_bytes=300_000, rows=2000)
    got = budget.spend(costly, Limits())
    assert got.steps == budget.STEP_MULTIPLE * 10**9 and got.cpu_s == Limits().cpu_s  # never past the hard cap
    assert budget.file_mb(300_000, Limits()) == budget.FILE_FLOOR_MB and budget.file_mb(40 * 2**20, Limits()) == 640
    assert budget.spend(small, Limits(steps=5, read_steps=6)).steps == 5


@pytest.mark.parametrize("family", sorted(DEV))
def test_every_references_own_cost_is_far_inside_its_budget(family):
    s, sql = _task(family)
    p = prepared(s, heldout_rows(s), heldout_key(s.seed))
    for world in p.worlds:
        got = budget.spend(world.cost, Limits())
        assert world.cost.steps * 10 < got.steps and world.cost.read_steps * 10 < got.read_steps, (
            world.name,
            world.cost,
        )
        assert world.cost.cpu_s * 10 < got.cpu_s, world.cost


# --- Issue 38: grading cost bounded by the task, and by a hard cap whatever the input.

NAMED_LIMIT = r"(step|CPU|hard CPU-time) limit"
"""Which of the CPU-work limits stops a sort depends on where the single long VM step falls: the
per-database CPU budget (checked between steps) or the hard cap (RLIMIT_CPU) during the step."""
ROWS = "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {n}) SELECT x FROM c)"
HOSTILE = {
    # One printf() past the length limit still formats 30 M characters: ~0.12 CPU-s in one VM step.
    "printf of 30 M characters per row": (
        "split_column",
        lambda s, sql: f"{sql}\nSELECT count(printf('%.*c', 30000000, {s.params['first']})) FROM {s.params['table']};",
        NAMED_LIMIT,
    ),
    "ORDER BY randomblob(64) over 3 M rows": (
        "split_column",
        lambda s, sql: (
            f"{sql}\nSELECT count(*) FROM (SELECT x FROM {ROWS.format(n=3_000_000)} ORDER BY randomblob(64));"
        ),
        NAMED_LIMIT,
    ),
    "ORDER BY randomblob(64) over 30 M rows": (
        "split_column",
        lambda s, sql: (
            f"{sql}\nSELECT count(*) FROM (SELECT x FROM {ROWS.format(n=30_000_000)} ORDER BY randomblob(64));"
        ),
        NAMED_LIMIT,
    ),
    "700 MB written": (
        "split_column",
        lambda s, sql: f"{sql}\nCREATE TABLE junk AS SELECT zeroblob(1000000) AS b FROM {ROWS.format(n=700)};",
        r"file-size limit reached \(64 MiB",
    ),
    "a trigger spinning on every later write": (
        "check_repair",
        lambda s, sql: (
            f"{sql}\nCREATE TRIGGER spin AFTER INSERT ON {s.params['table']} BEGIN SELECT count(*) FROM {ROWS.format(n=10**12)}; END;"
        ),
        NAMED_LIMIT,
    ),
}


def test_the_hard_cpu_cap_and_the_derived_file_limit_are_in_force_in_the_child(tmp_path):
    db = tmp_path / "world0.sqlite"
    db.touch()
    budget_ = {"steps": 10**6, "read_steps": 10**6, "cpu_s": 1.0, "read_cpu_s": 1.0}
    world = {
        "name": "main",
        "db": db.name,
        "tables": [],
        "views": [],
        "untouched": [],
        "battery": None,
        "plan": None,
        "budget": budget_,
    }
    s, _ = _task("split_column")
    limit_mb = budget.file_mb(
        max(w.cost.file_bytes for w in prepared(s, heldout_rows(s), heldout_key(s.seed)).worlds), Limits()
    )
    [report] = jail.run(tmp_path, ["SELECT 1"], [world], Limits(), limit_mb)
    assert report.limits["cpu_s"] == Limits().cpu_s <= 8
    assert report.limits["file_bytes"] == budget.FILE_FLOOR_MB * 2**20


def test_a_migration_writing_past_a_lowered_file_size_limit_scores_zero_naming_it_with_the_database_unchanged():
    s, sql = _task("split_column")
    result = grade(
        f"{sql}\nCREATE TABLE junk AS SELECT zeroblob(1000000) AS b FROM {ROWS.format(n=10)};",
        s,
        limits=Limits(file_mb=4),
    )
    assert (result.score, result.stage, result.unchanged_after_error) == (0.0, "error", True), result.reason
    assert "file-size limit reached (4 MiB" in result.reason and "left unchanged" in result.reason, result.reason


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_migration_scores_zero_naming_its_limit_within_ten_cpu_seconds(case):
    family, build, named = HOSTILE[case]
    s, sql = _task(family)
    out = _grade_isolated(family, build(s, sql))
    assert out["score"] == 0.0, out["reason"]
    assert re.search(named, out["reason"]), out["reason"]
    assert out["cpu_s"] + out["child_cpu_s"] < 10, out  # CPU time (the hard cap is 8 CPU-s), never wall time


@pytest.mark.parametrize(
    "sql, why",
    [
        ("SELECT 'a\x00b';", "NUL character"),
        ("SELECT '\ud800';", "not valid Unicode"),
        ("SELECT '" + "x" * 200_000 + "';", "the limit is"),
        (b"SELECT 1;", "not text"),
        ("", "no statement"),
        ("-- only a comment", "no statement"),
        ("BEGIN; COMMIT;", "no statement"),
    ],
    ids=["nul", "lone-surrogate", "200-kB", "bytes", "empty", "comment", "begin-commit"],
)
def test_grade_never_raises_and_refuses_what_it_cannot_run_with_a_reason(sql, why):
    s, _ = _task("split_column")
    result = grade(sql, s)  # type: ignore[arg-type]
    assert (result.score, result.stage) == (0.0, "refused") and why in result.reason, result.reason


def test_a_hundred_thousand_semicolons_inside_a_string_or_a_trigger_body_are_one_statement():
    """Splitting is linear (tests/toolsets/sqlite_sandbox counts SQLite's calls); here the grade agrees."""
    s, sql = _task("split_column")
    assert grade(sql + "\nSELECT '" + ";" * 99_000 + "';", s).score == 1.0
    trigger = f"CREATE TRIGGER spin AFTER INSERT ON {s.params['table']} BEGIN " + ";" * 99_000 + " SELECT 1; END;"
    result = grade(sql + "\n" + trigger, s)
    assert (result.score, result.stage) != (0.0, "refused") and "syntax error" in result.reason, result.reason


def _quadratic_dedupe(s) -> str:
    """A correct dedupe by correlated EXISTS over lower(trim(email)): ~7 n² VM steps."""
    p = s.params
    t, col, c, fk = p["table"], p["column"], p["child"], p["fk"]
    first = "<" if p["keep"] == "lowest" else ">"
    norm = lambda a: f"lower(trim({a}.{col}))"  # noqa: E731
    return f"""
UPDATE {c} SET {fk} = coalesce((SELECT k.id FROM {t} AS o, {t} AS k WHERE o.id = {c}.{fk} AND trim(coalesce(o.{col}, '')) <> ''
  AND {norm("k")} = {norm("o")} AND NOT EXISTS (SELECT 1 FROM {t} AS b WHERE {norm("b")} = {norm("k")} AND b.id {first} k.id)), {fk});
DELETE FROM {t} WHERE trim(coalesce({col}, '')) <> '' AND EXISTS (SELECT 1 FROM {t} AS b WHERE {norm("b")} = lower(trim({t}.{col})) AND b.id {first} {t}.id);
UPDATE {t} SET {col} = nullif(lower(trim({col})), '');
CREATE UNIQUE INDEX {p["index"]} ON {t}({col});
"""


@pytest.mark.slow
def test_a_correct_quadratic_dedupe_passes_at_the_default_size_and_its_steps_fit_at_twelve_thousand_rows():
    s, _ = _task("unique_dedupe")
    result = grade(_quadratic_dedupe(s), s)
    assert result.score == 1.0, result.reason
    # At 12,000 rows it takes 36x the steps: the step budget's quadratic floor admits them (the CPU cap,
    # 8 CPU-s for all of grading, does not: ~40 CPU-s here; see the README's cost bound).
    cost = budget.Cost(steps=0, read_steps=0, cpu_s=0.0, read_cpu_s=0.0, file_bytes=0, rows=12_000)
    assert budget.spend(cost, Limits()).steps >= 36 * result.steps
