"""The probe and demo tables: one mean (task means, then over tasks) with an interval inside [0, 1]
that never claims certainty, failed episodes beside the mean, pass@k with several rollouts."""

import json

import pytest

from arena.demo import render_rows
from arena.evalrun import read_outcome
from arena.probe import render_table, score_outcome
from arena_testkit.synthetic_runs import episode_line, simple_run, write_run


def _demo(outcome) -> str:
    return render_rows([("env-a", "oracle", outcome, 12.0)])


def test_the_demo_prints_three_of_three_as_the_exact_interval_not_plus_minus_zero(tmp_path):
    table = _demo(read_outcome(simple_run(tmp_path / "run", {"a": [1.0], "b": [1.0], "c": [1.0]})))
    assert "± 0.000" not in table and "1.000 [0.292, 1.000]" in table
    assert "3 tasks: too few for an informative interval" in table
    assert "one mean [95% interval]" in table.splitlines()[1] and "one mean: each task's mean" in table


@pytest.mark.parametrize(
    ("rewards", "text"),
    [
        ({"a": [1.0], "b": [1.0], "c": [1.0], "d": [1.0], "e": [0.0]}, "0.800 [0.284, 0.995]"),  # was 0.800 ± 0.555
        ({"a": [1.0], "b": [1.0], "c": [0.0]}, "0.667 [0.094, 0.992]"),  # was 0.667 ± 1.434
    ],
)
def test_the_interval_stays_inside_the_unit_interval(tmp_path, rewards, text):
    outcome = read_outcome(simple_run(tmp_path / "run", rewards))
    assert text in _demo(outcome)
    score = score_outcome("env-a", "oracle", outcome)
    assert 0.0 <= score.low <= score.lower <= score.mean <= score.upper <= score.high <= 1.0
    assert text in render_table([score])


def test_every_table_shows_one_mean_over_tasks_not_over_episodes(tmp_path):
    outcome = read_outcome(simple_run(tmp_path / "run", {"a": [1.0, 1.0, 1.0], "b": [0.0]}))
    score = score_outcome("env-a", "oracle", outcome)
    assert score.mean == 0.5 and score.tasks == 2  # by episode: 0.75
    assert " 0.500 [" in _demo(outcome) and " 0.500 [" in render_table([score])
    assert "0.750" not in _demo(outcome)


def test_an_infrastructure_failure_is_reported_beside_the_mean_not_scored_zero_in_it(tmp_path):
    rows = [episode_line(t, 1.0, trace_id=t) for t in ("a", "b", "c")]
    rows.append(episode_line("d", 0.0, trace_id="d", ok=False, stop="boxlost_error"))
    outcome = read_outcome(write_run(tmp_path / "run", rows))
    score = score_outcome("env-a", "oracle", outcome)
    assert (score.mean, score.tasks, score.failed, score.infra_failed, score.episodes) == (1.0, 3, 1, 1, 4)
    demo = _demo(outcome)
    assert (
        "1 (25%)" in demo and "1 of 4 episodes failed (25%): 0 scored 0, 1 on an infrastructure fault left out" in demo
    )
    assert "1 (25%)" in render_table([score])


def test_an_agent_that_runs_out_its_clock_scores_zero_and_keeps_the_task_in_its_mean(tmp_path):
    # Leaving a timed-out task out of the mean would let an agent that hangs on its hardest tasks
    # drop them: only a typed infrastructure fault leaves the mean.
    rows = [episode_line(t, 1.0, trace_id=t) for t in ("a", "b", "c")]
    rows.append(episode_line("d", None, trace_id="d", ok=False, stop="timeout"))
    outcome = read_outcome(write_run(tmp_path / "run", rows))
    score = score_outcome("env-a", "oracle", outcome)
    assert (score.mean, score.tasks, score.failed, score.infra_failed) == (0.75, 4, 1, 0)
    assert "1 of 4 episodes failed (25%): 1 scored 0, 0 on an infrastructure fault left out" in _demo(outcome)


def test_pass_at_k_and_pass_hat_k_appear_with_several_rollouts_a_task(tmp_path):
    outcome = read_outcome(
        simple_run(tmp_path / "run", {"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0], "c": [1.0, 1.0, 1.0]})
    )
    score = score_outcome("env-a", "oracle", outcome)
    # a: pass@3 1, pass^3 0; b: 0, 0; c: 1, 1
    assert score.pass_k == pytest.approx({"k": 3, "pass_at_k": 2 / 3, "pass_hat_k": 1 / 3})
    assert "pass@3 0.667  pass^3 0.333" in _demo(outcome) and "pass@3 0.667 pass^3 0.333" in render_table([score])
    single = score_outcome("env-a", "oracle", read_outcome(simple_run(tmp_path / "one", {"a": [1.0]})))
    assert single.pass_k is None and "pass@" not in render_table([single])


def test_the_probe_scores_json_carries_bounds_and_rewards_by_task(tmp_path):
    from dataclasses import asdict

    score = score_outcome("env-a", "oracle", read_outcome(simple_run(tmp_path / "run", {"a": [1.0], "b": [0.5]})))
    row = json.loads(json.dumps(asdict(score)))
    assert row["rewards"] == {"a": [1.0], "b": [0.5]} and row["method"].startswith("betting")
    assert {"low", "high", "lower", "upper", "tasks"} <= row.keys() and "ci95" not in row


def test_no_scored_episode_prints_a_dash_not_a_zero(tmp_path):
    outcome = read_outcome(
        write_run(tmp_path / "run", [episode_line("a", 1.0, trace_id="a", ok=False, stop="boxlost_error")])
    )
    score = score_outcome("env-a", "oracle", outcome)
    assert score.mean is None and score.tasks == 0
    assert "no scored tasks" in _demo(outcome) and "no scored tasks" in render_table([score])
