"""The gate's statistics: exact where exact is cheap, inside [0, 1], never certain from no spread."""

import pytest

from arena_kit.gate.stats import decide, estimate, holm, paired_test, pass_at_k, pass_hat_k, run_pass_at_k


def test_three_of_three_is_the_clopper_pearson_interval_not_certainty():
    est = estimate({"a": [1.0], "b": [1.0], "c": [1.0]})
    assert est.mean == 1.0 and est.high == 1.0
    assert est.low == pytest.approx(0.2924, abs=1e-4)
    assert not est.informative and "too few" in est.note


def test_continuous_rewards_get_a_nonzero_interval_inside_the_unit_interval():
    est = estimate({"a": [0.9], "b": [0.9], "c": [0.9], "d": [0.9]})
    assert 0.0 <= est.low < 0.9 < est.high <= 1.0
    est = estimate({"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 0.0]})
    assert est.mean == pytest.approx(0.5) and 0.0 <= est.low < est.high <= 1.0


def test_the_mean_is_over_tasks_of_each_tasks_mean():
    assert estimate({"a": [1.0, 1.0, 1.0], "b": [0.0]}).mean == pytest.approx(0.5)


def test_a_reward_outside_the_unit_interval_is_refused():
    with pytest.raises(ValueError):
        estimate({"a": [1.5]})


def test_three_tasks_all_lost_are_not_significant_by_the_exact_sign_test():
    result = paired_test({t: [1.0] for t in "abc"}, {t: [0.0] for t in "abc"})
    assert result.p_value == pytest.approx(0.25)
    assert not result.significant and result.low <= 0 <= result.high
    assert (result.wins, result.losses, result.ties) == (0, 3, 0)


def test_the_paired_interval_excludes_zero_exactly_when_p_is_small():
    a = {str(i): [0.6] for i in range(12)}
    b = {str(i): [0.6 + (0.1 if i % 4 else -0.05)] for i in range(12)}
    result = paired_test(a, b)
    assert result.significant == (not result.low <= 0 <= result.high)


def test_holm_adjusts_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators():
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert run_pass_at_k({"a": [1.0, 0.0], "b": [0.0]}, 2) == pytest.approx(1.0)  # b has too few rollouts
    assert run_pass_at_k({"a": [1.0, 0.0], "b": [0.0]}, 2, every=True) == pytest.approx(0.0)


def test_a_rule_is_undecided_until_its_bound_can_decide_it():
    five = decide(estimate({str(i): [1.0] for i in range(5)}), 0.9, "at_least")
    assert five.status == "undecided" and five.tasks_needed == 29
    assert decide(estimate({str(i): [1.0] for i in range(29)}), 0.9, "at_least").status == "met"
    assert decide(estimate({str(i): [0.5] for i in range(50)}), 0.35, "at_most").status == "failed"
