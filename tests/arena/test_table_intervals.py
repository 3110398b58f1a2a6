"""The probe and demo tables print each mean with the half-width of its task-clustered 95 % interval."""

import math

import pytest

from arena.demo import render_rows
from arena.evalrun import read_outcome
from arena.probe import render_table, score_outcome
from arena.stats import clustered_mean
from arena_testkit.synthetic_runs import simple_run


def test_the_probe_scores_and_prints_the_interval_clustered_by_task(tmp_path):
    outcome = read_outcome(simple_run(tmp_path / "run", {"a": [1.0, 1.0], "b": [0.0, 0.0], "c": [1.0, 0.0]}))
    score = score_outcome("env-a", "oracle", outcome)
    assert score.ci95 == pytest.approx(clustered_mean([1, 1, 0, 0, 1, 0], list("aabbcc")).half_width)
    table = render_table([score])
    assert "± 95%" in table.splitlines()[0] and f"{score.ci95:.3f}" in table


def test_a_one_task_probe_prints_a_question_mark_not_a_number(tmp_path):
    score = score_outcome("env-a", "oracle", read_outcome(simple_run(tmp_path / "run", {"a": [1.0]})))
    assert score.ci95 is None and " ? " in render_table([score])


def test_the_demo_table_prints_mean_plus_minus_the_interval(tmp_path):
    outcome = read_outcome(simple_run(tmp_path / "run", {"a": [1.0], "b": [0.0], "c": [1.0]}))
    table = render_rows([("env-a", "oracle", outcome, 12.0)])
    half = 4.302652729911275 * math.sqrt(1 / 3) / math.sqrt(3)
    assert "mean reward ± 95%" in table and f"0.667 ± {half:.3f}" in table
