"""The gate's statistics: exact where exact is cheap, inside [0, 1], never certain from no spread."""

import math

import numpy as np
import pytest

from arena_kit.gate.stats import decide, estimate, holm, intervals, pass_at_k, pass_hat_k, run_pass_at_k, tasks_needed


def _runs(values, rollouts=1):
    return {f"t{i:03d}": [v] * rollouts for i, v in enumerate(values)}


def test_three_of_three_is_the_clopper_pearson_interval_not_certainty():
    est = estimate(_runs([1.0, 1.0, 1.0]))
    assert est.mean == 1.0 and est.high == 1.0
    assert est.low == pytest.approx(0.2924, abs=1e-4)  # the exact [0.29, 1.00]
    assert f"{est.low:.2f}" == "0.29" and est.text() == "1.000 [0.292, 1.000]"
    assert not est.informative and "too few" in est.note


@pytest.mark.parametrize("values", [[1, 1, 1, 1, 0], [1, 1, 0]])
def test_four_of_five_and_two_of_three_stay_inside_the_unit_interval(values):
    # The old t interval printed [0.245, 1.355] and [-0.768, 2.101].
    est = estimate(_runs([float(v) for v in values]))
    assert 0.0 <= est.low < est.mean < est.high <= 1.0
    assert 0.0 <= est.lower <= est.mean <= est.upper <= 1.0
    assert est.high < 1.0  # a failure was seen: the upper end is not 1


def test_every_run_with_zero_spread_still_gets_a_wide_interval():
    for value in (0.0, 0.5, 0.9, 1.0):
        est = estimate(_runs([value] * 4))
        assert est.high - est.low > 0.3, value


def test_continuous_rewards_get_a_nonzero_interval_inside_the_unit_interval():
    est = estimate(_runs([0.9] * 4))
    assert 0.0 <= est.low < 0.9 < est.high <= 1.0 and "betting" in est.method
    est = estimate({"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 0.0]})
    assert est.mean == pytest.approx(0.5) and 0.0 <= est.low < est.high <= 1.0


def test_the_mean_is_over_tasks_of_each_tasks_mean():
    est = estimate({"a": [1.0, 1.0, 1.0], "b": [0.0]})
    assert est.mean == pytest.approx(0.5) and (est.tasks, est.episodes) == (2, 4)


def test_a_reward_outside_the_unit_interval_or_a_bad_level_is_refused():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        estimate({"a": [1.5]})
    with pytest.raises(ValueError, match="confidence level"):
        estimate({"a": [1.0]}, level=1.0)


def test_no_task_is_nan_and_prints_a_dash():
    est = estimate({})
    assert est.tasks == 0 and math.isnan(est.mean) and est.text() == "—" and est.note == "no scored tasks"


def test_the_interval_does_not_depend_on_the_order_tasks_are_given_in():
    values = [0.1, 0.9, 0.4, 1.0, 0.0, 0.7, 0.3]
    forward = {f"t{i}": [v] for i, v in enumerate(values)}
    backward = dict(reversed(list(forward.items())))
    assert estimate(forward) == estimate(backward)


def test_an_interval_always_contains_its_mean_and_one_sided_bounds_are_inside_the_two_sided():
    rng = np.random.default_rng(7)
    x = rng.beta(0.3, 0.3, size=(300, 12))
    low, high, lower, upper = intervals(x, binary=False)
    mean = x.mean(axis=1)
    assert np.all(low <= mean) and np.all(mean <= high)
    assert np.all(low <= lower + 1e-9) and np.all(upper <= high + 1e-9)


def test_one_run_gets_the_same_interval_alone_as_in_a_batch():
    rng = np.random.default_rng(3)
    x = rng.random((5, 9))
    batch = intervals(x, binary=False)
    for i in range(5):
        est = estimate({f"t{j}": [v] for j, v in enumerate(x[i])})
        ordered = [est.low, est.high, est.lower, est.upper]
        # estimate bets in its own (hashed) order, so compare with the same row in that order
        again = intervals(np.array([[x[i][int(t[1:])] for t in _hashed(x.shape[1])]]), binary=False)
        assert ordered == pytest.approx([float(v[0]) for v in again], abs=1e-12)
    assert all(b.shape == (5,) for b in batch)


def _hashed(n):
    from arena_kit.gate.bounds import betting_order

    return betting_order(f"t{j}" for j in range(n))


def test_holm_adjusts_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators():
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert run_pass_at_k({"a": [1.0, 0.0], "b": [0.0]}, 2) == pytest.approx(1.0)  # b has too few rollouts
    assert run_pass_at_k({"a": [1.0, 0.0], "b": [0.0]}, 2, every=True) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_a_rule_is_undecided_until_its_bound_can_decide_it():
    five = decide(estimate(_runs([1.0] * 5)), 0.9, "at_least")
    assert five.status == "undecided" and five.tasks_needed == 29 and "run more tasks (about 29)" in five.text
    assert decide(estimate(_runs([1.0] * 29)), 0.9, "at_least").status == "met"
    failed = decide(estimate(_runs([0.5] * 50)), 0.35, "at_most")
    assert failed.status == "failed" and failed.text.startswith("failed: lower bound")


def test_a_cheater_scoring_nothing_is_no_better_than_the_staller_at_29_tasks():
    assert decide(estimate(_runs([0.0] * 28)), 0.10, "at_most").status == "undecided"
    assert decide(estimate(_runs([0.0] * 29)), 0.10, "at_most").status == "met"


def test_planning_counts_more_tasks_for_a_mean_nearer_the_threshold():
    near, far = tasks_needed(0.95, 0.9, "at_least"), tasks_needed(1.0, 0.9, "at_least")
    assert far == 29 and near is not None and near > far
    assert tasks_needed(0.9, 0.9, "at_least") is None
