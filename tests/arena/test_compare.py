"""`arena compare`: the paired difference of two run directories, as text and as JSON."""

import json
import subprocess
import sys

import pytest

from arena.compare import compare_runs
from arena_testkit.synthetic_runs import episode_line, simple_run, write_run


@pytest.mark.slow
def test_compare_prints_the_difference_its_interval_and_the_tasks_that_differ(tmp_path):
    a = simple_run(tmp_path / "a", {"t1": [1.0], "t2": [0.0], "t3": [1.0], "t4": [0.0]})
    b = simple_run(tmp_path / "b", {"t1": [1.0], "t2": [1.0], "t3": [1.0], "t4": [1.0]})
    done = subprocess.run([sys.executable, "-m", "arena.cli", "compare", str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "B − A = +0.500  95 % CI [-0.419, +1.419]  on 4 shared tasks" in done.stdout
    assert "2 task(s) whose outcome differs" in done.stdout and "t2" in done.stdout and "t4" in done.stdout


@pytest.mark.slow
def test_compare_json_is_for_scripts(tmp_path):
    a = simple_run(tmp_path / "a", {"t1": [1.0, 0.0], "t2": [0.0]})
    b = simple_run(tmp_path / "b", {"t1": [1.0], "t2": [1.0], "t3": [1.0]})
    done = subprocess.run([sys.executable, "-m", "arena.cli", "compare", str(a), str(b), "--json"], capture_output=True, text=True, timeout=60)
    result = json.loads(done.stdout)
    assert result["tasks"] == 2 and result["difference"] == 0.75 and result["only_b"] == ["t3"]
    assert [d["task"] for d in result["differing"]] == ["t1", "t2"] and result["low"] < 0.75 < result["high"]


def test_a_failed_episode_counts_as_zero(tmp_path):
    a = write_run(tmp_path / "a", [episode_line("t1", 1.0, trace_id="x", ok=False), episode_line("t2", 1.0, trace_id="y")])
    b = simple_run(tmp_path / "b", {"t1": [1.0], "t2": [1.0]})
    result = compare_runs(a, b).result
    assert result.mean_a == 0.5 and [task for task, _, _ in result.differing] == ["t1"]


@pytest.mark.slow
def test_runs_without_traces_or_shared_tasks_exit_2_with_the_reason(tmp_path):
    a = simple_run(tmp_path / "a", {"t1": [1.0]})
    b = simple_run(tmp_path / "b", {"t9": [1.0]})
    for args, needle in (([str(a), str(tmp_path)], "has no traces.jsonl"), ([str(a), str(b)], "share no task")):
        done = subprocess.run([sys.executable, "-m", "arena.cli", "compare", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and needle in done.stderr
