"""The retired `arena.stats` (only the viewer still imports it; delete with it): hand-computed values."""

import math

import pytest

from arena.stats import by_task, clustered_mean, paired_difference, t_quantile

T2, T3 = 4.302652729911275, 3.182446305284263
"""t quantiles (0.975) for 2 and 3 degrees of freedom, from tables."""


def test_t_quantiles_match_the_tables():
    assert t_quantile(2) == pytest.approx(T2) and t_quantile(3) == pytest.approx(T3)


def test_one_episode_per_task_is_the_textbook_t_interval():
    i = clustered_mean([1.0, 0.0, 1.0, 0.0])
    # s = sqrt(1/3), se = s / 2, half-width = t(3) * se
    assert (i.mean, i.n, i.tasks) == (0.5, 4, 4)
    assert i.se == pytest.approx(math.sqrt(1 / 3) / 2)
    assert (i.low, i.high) == pytest.approx((0.5 - T3 * math.sqrt(1 / 3) / 2, 0.5 + T3 * math.sqrt(1 / 3) / 2))


def test_rollouts_that_agree_within_a_task_widen_the_interval_over_the_naive_one():
    # Tasks a: 1, 1; b: 0, 0; c: 1, 0. Residual sums by task 1, -1, 0; G = 3;
    # CR1: se = sqrt(3/2 * 2) / 6 = sqrt(3)/6, against the naive sqrt(0.3/6).
    values, tasks = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0], ["a", "a", "b", "b", "c", "c"]
    clustered, naive = clustered_mean(values, tasks), clustered_mean(values)
    assert clustered.se == pytest.approx(math.sqrt(3) / 6) and naive.se == pytest.approx(math.sqrt(0.3 / 6))
    assert clustered.tasks == 3 and clustered.half_width == pytest.approx(T2 * math.sqrt(3) / 6)
    assert clustered.se > naive.se


def test_the_clustered_se_matches_the_sandwich_estimator_of_an_intercept_only_regression():
    # Liang-Zeger with CR1 for y = b0: V = G/(G-1) * (N-1)/(N-K) * sum_g (X_g'e_g)^2 / (X'X)^2, K = 1.
    values = [0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.7]
    tasks = ["p", "p", "q", "r", "r", "r", "s"]
    mean = sum(values) / len(values)
    scores = {t: sum(v - mean for v, u in zip(values, tasks) if u == t) for t in set(tasks)}
    g, n = len(scores), len(values)
    expected = math.sqrt(g / (g - 1) * (n - 1) / (n - 1) * sum(s * s for s in scores.values()) / n**2)
    assert clustered_mean(values, tasks).se == pytest.approx(expected)


def test_one_task_or_none_has_no_interval_and_equal_values_a_zero_width_one():
    assert math.isnan(clustered_mean([1.0, 0.0], ["a", "a"]).se)
    assert clustered_mean([1.0, 0.0], ["a", "a"]).text() == "0.500 ± ?"
    assert clustered_mean([]).text() == "—"
    zero = clustered_mean([0.0, 0.0, 0.0])
    assert (zero.low, zero.high, zero.text()) == (0.0, 0.0, "0.000 ± 0.000")


def test_labels_must_match_values():
    with pytest.raises(ValueError, match="2 values but 1 cluster labels"):
        clustered_mean([1.0, 0.0], ["a"])


def test_the_paired_difference_averages_rollouts_per_task_then_takes_a_t_interval_over_tasks():
    a = {"t1": [1.0], "t2": [0.0], "t3": [1.0, 0.0], "only-a": [1.0]}
    b = {"t1": [1.0], "t2": [1.0], "t3": [1.0], "t4": [1.0]}
    d = paired_difference(a, b)
    # Differences 0, 1, 0.5: mean 0.5, sd 0.5, se 0.5/sqrt(3), t with 2 df.
    assert (d.interval.mean, d.interval.tasks) == (0.5, 3)
    assert d.interval.se == pytest.approx(0.5 / math.sqrt(3))
    assert d.interval.half_width == pytest.approx(T2 * 0.5 / math.sqrt(3))
    assert (d.mean_a, d.mean_b) == pytest.approx((0.5, 1.0))
    assert [task for task, _, _ in d.differing] == ["t2", "t3"]
    assert (d.only_a, d.only_b) == (["only-a"], ["t4"])


def test_pairing_removes_the_task_difficulty_two_runs_share():
    # B is A + 0.1 on every task: the difference is certain even though each mean is not.
    a = {f"t{i}": [v] for i, v in enumerate([0.1, 0.5, 0.9, 0.3, 0.7])}
    b = {task: [values[0] + 0.1] for task, values in a.items()}
    d = paired_difference(a, b)
    assert d.interval.mean == pytest.approx(0.1) and d.interval.half_width == pytest.approx(0.0, abs=1e-12)
    assert clustered_mean([v[0] for v in a.values()]).half_width > 0.3


def test_by_task_groups_in_first_seen_order():
    assert by_task([("b", 1.0), ("a", 0.0), ("b", 0.5)]) == {"b": [1.0, 0.5], "a": [0.0]}
