"""`arena compare BASELINE RUN…`: the exact paired test, an interval that agrees with it, Holm over
several runs, a planning figure that is never 0, `--fail-if-worse`, and warnings."""

import json
import shutil
import subprocess
import sys

import pytest

from arena.cli import main
from arena.compare import compare_runs
from arena_kit.gate.stats import holm
from arena_testkit.synthetic_runs import episode_line, simple_run, write_run

ORACLE = {"t1": [1.0], "t2": [1.0], "t3": [1.0]}
STALLER = {"t1": [0.0], "t2": [0.0], "t3": [0.0]}


def _cli(capsys, *args):
    code = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_demos_oracle_against_its_staller_is_p_025_and_not_significant_with_3_tasks(tmp_path, capsys):
    # The old compare printed "B − A = -1.000, 95 % CI [-1.000, -1.000]": certainty from 3 tasks.
    code, out, _ = _cli(capsys, simple_run(tmp_path / "oracle", ORACLE), simple_run(tmp_path / "staller", STALLER))
    assert code == 0
    assert "B − A = -1.000  95% CI [-1.000, +0.529]  p = 0.25 (not significant with 3 tasks)" in out
    assert "B better on 0, worse on 3, tied on 0" in out and "one mean 1.000 [0.292, 1.000] over 3 task(s)" in out


def test_the_json_planning_figure_is_labelled_and_never_zero_even_with_no_spread(tmp_path, capsys):
    # Every task differs by the same amount: the old "detectable difference" was 0.0.
    a = simple_run(tmp_path / "a", {f"t{i}": [0.5] for i in range(20)})
    b = simple_run(tmp_path / "b", {f"t{i}": [0.7] for i in range(20)})
    code, out, _ = _cli(capsys, a, b, "--json")
    result = json.loads(out)
    [run] = result["runs"]
    assert code == 0 and run["paired"]["spread"] == pytest.approx(0.0, abs=1e-12)
    assert run["planning"]["detectable_difference"] > 0.1 and "assumed" in run["planning"]["label"]
    paired = run["paired"]
    assert paired["low"] < paired["difference"] < paired["high"] and paired["high"] - paired["low"] > 0.1


def test_a_failed_episode_is_beside_the_mean_not_a_zero_in_it(tmp_path):
    a = write_run(
        tmp_path / "a",
        [episode_line("t1", 1.0, trace_id="x", ok=False, stop="boxlost_error"), episode_line("t2", 1.0, trace_id="y")],
    )
    b = simple_run(tmp_path / "b", {"t1": [1.0], "t2": [1.0]})
    report = compare_runs(a, [b])
    assert report.baseline_scores.estimate.mean == 1.0 and report.baseline_scores.failed == 1
    assert report.comparisons[0].result.tasks == 1  # t1 has no scored episode in A
    assert any("1 of 2 episodes failed (1 on an infrastructure fault)" in w for w in report.warnings)


def test_each_run_shows_its_one_mean_the_same_as_the_tables(tmp_path, capsys):
    a = simple_run(tmp_path / "a", {"t1": [1.0, 1.0, 1.0], "t2": [0.0]})
    b = simple_run(tmp_path / "b", {"t1": [1.0]})
    _code, out, _ = _cli(capsys, a, b)
    assert "one mean 0.500 [" in out.splitlines()[0]  # over its tasks, not 0.750 over episodes
    assert "on the 1 shared task(s) A 1.000, B 1.000" in out


def test_several_runs_against_one_baseline_are_holm_adjusted(tmp_path, capsys):
    base = simple_run(tmp_path / "base", {f"t{i}": [0.0] for i in range(12)})
    runs = [
        simple_run(tmp_path / f"r{k}", {f"t{i}": [1.0 if i < 12 - 3 * k else 0.0] for i in range(12)}) for k in range(3)
    ]
    report = compare_runs(base, runs)
    p = [c.result.p_value for c in report.comparisons]
    assert [c.p_holm for c in report.comparisons] == pytest.approx(holm(p))
    code, out, _ = _cli(capsys, base, *runs)
    assert code == 0 and out.count("Holm-adjusted p over the 3 runs") == 3


def test_fail_if_worse_exits_1_when_shown_worse_3_when_it_cannot_tell_0_when_shown_within(tmp_path, capsys):
    good = simple_run(tmp_path / "good", {f"t{i}": [1.0] for i in range(40)})
    worse = simple_run(tmp_path / "worse", {f"t{i}": [0.0] for i in range(40)})
    same = simple_run(tmp_path / "same", {f"t{i}": [1.0] for i in range(40)})
    few = simple_run(tmp_path / "few", {f"t{i}": [0.0] for i in range(3)})
    assert _cli(capsys, good, worse, "--fail-if-worse", "0.1")[0] == 1
    assert _cli(capsys, good, same, "--fail-if-worse", "0.2")[0] == 0
    code, out, _ = _cli(capsys, good, few, "--fail-if-worse", "0.1")
    assert code == 3 and "undecided: run more tasks" in out
    assert _cli(capsys, good, worse)[0] == 0  # without the flag compare only reports
    code, _, err = _cli(capsys, good, worse, "--fail-if-worse", "-1")
    assert code == 2 and "--fail-if-worse" in err


def test_comparing_a_run_with_itself_or_its_copy_warns(tmp_path, capsys):
    a = simple_run(tmp_path / "a", ORACLE)
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    code, _, err = _cli(capsys, a, a, copy)
    assert code == 0
    assert "is the baseline itself" in err and "has the same traces as the baseline (a copy)" in err


def test_runs_without_traces_or_shared_tasks_or_with_rewards_outside_0_1_exit_2_with_the_reason(tmp_path, capsys):
    a = simple_run(tmp_path / "a", {"t1": [1.0]})
    b = simple_run(tmp_path / "b", {"t9": [1.0]})
    big = simple_run(tmp_path / "big", {"t1": [2.0]})
    for args, needle in (
        ([a, tmp_path], "has no traces.jsonl"),
        ([a, b], "share no scored task"),
        ([a, big], "in [0, 1]"),
    ):
        code, _, err = _cli(capsys, *args)
        assert code == 2 and needle in err


@pytest.mark.slow
def test_the_command_line_runs_compare_as_a_subprocess(tmp_path):
    a, b = simple_run(tmp_path / "a", ORACLE), simple_run(tmp_path / "b", STALLER)
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "compare", str(a), str(b), "--fail-if-worse", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3 and "p = 0.25 (not significant with 3 tasks)" in done.stdout, done.stderr
