"""The paired test: exact at few tasks, an interval that agrees with p and never has zero width."""

import numpy as np
import pytest

from arena_kit.gate.paired import sign_flip_p_values
from arena_kit.gate.stats import decide, paired_test


def _run(values):
    return {f"t{i:03d}": [float(v)] for i, v in enumerate(values)}


def test_three_tasks_all_lost_are_not_significant_by_the_exact_sign_test():
    result = paired_test(_run([1, 1, 1]), _run([0, 0, 0]))
    assert result.p_value == pytest.approx(0.25)
    assert not result.significant and result.low <= 0 <= result.high and result.low == -1.0
    assert (result.wins, result.losses, result.ties) == (0, 3, 0)
    assert "p = 0.25 (not significant with 3 tasks)" in result.text()


def test_six_tasks_all_lost_are_significant_but_not_certain():
    result = paired_test(_run([1] * 6), _run([0] * 6))
    assert result.p_value == pytest.approx(2 / 64) and result.significant
    # The inverted sign-flip interval was [-1, -1]; the mean could be near 0 with six tasks.
    assert result.low == -1.0 and result.high == 0.0 and result.interval_text() == "[-1.000, 0)"
    assert -0.2 < result.upper < 0.0


def test_a_constant_difference_is_not_a_certain_one():
    a = _run([0.1, 0.5, 0.9, 0.3, 0.7])
    b = {task: [values[0] + 0.1] for task, values in a.items()}
    result = paired_test(a, b)
    assert result.difference == pytest.approx(0.1)
    assert result.high - result.low > 0.2 and result.lower < 0.1 < result.upper


def test_the_interval_leaves_zero_out_exactly_when_p_is_small():
    rng = np.random.default_rng(11)
    for n in (4, 8, 12, 30):
        for _ in range(25):
            a = rng.random(n)
            b = np.clip(a + rng.normal(rng.choice([-0.2, 0.0, 0.2]), 0.15, n), 0, 1)
            r = paired_test(_run(a), _run(b))
            contains_zero = r.low < 0 < r.high or (not r.significant and r.low <= 0 <= r.high)
            assert r.significant != contains_zero, (n, r)
            assert -1 <= r.low <= r.difference <= r.high <= 1


def test_tasks_only_one_run_scored_are_listed_not_paired():
    result = paired_test({"t1": [1.0], "t2": [0.0], "x": [1.0]}, {"t1": [1.0], "t2": [1.0], "y": [0.0]})
    assert result.tasks == 2 and result.only_a == ["x"] and result.only_b == ["y"]
    assert result.differing == [("t2", 0.0, 1.0)]
    assert paired_test({"x": [1.0]}, {"y": [1.0]}).tasks == 0


def test_exact_monte_carlo_and_normal_regimes_agree_on_a_clear_difference():
    for n, most in ((16, 0.05), (100, 0.01), (500, 0.01)):
        d = np.where(np.arange(n) % 4 == 0, -0.2, 0.3)[:, None]
        assert float(sign_flip_p_values(d)[0]) < most, n
    assert float(sign_flip_p_values(np.zeros((5, 1)))[0]) == 1.0


def test_a_paired_rule_is_decided_by_the_one_sided_upper_bound():
    oracle = _run([1.0] * 50)
    exhaustive = _run([0.5] * 50)
    assert decide(paired_test(oracle, exhaustive), -0.15, "at_most").status == "met"
    close = _run([0.95] * 50)
    verdict = decide(paired_test(oracle, close), -0.15, "at_most")
    assert verdict.status == "failed" and verdict.text.startswith("failed: lower bound")
    few = decide(paired_test(_run([1.0] * 5), _run([0.5] * 5)), -0.15, "at_most")
    assert few.status == "undecided" and few.tasks_needed and few.tasks_needed > 5
