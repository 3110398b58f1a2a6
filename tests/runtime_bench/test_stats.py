"""The report's arithmetic: percentiles, per-rollout phases, throughput and the goal ratios."""

import pytest

from runtime_bench.stats import (
    best_level,
    docker_cli_seconds,
    goal_ratios,
    percentile,
    phase_summaries,
    rollout_row,
    summarize,
    throughput,
)


def test_percentile_interpolates_between_closest_ranks_like_numpy():
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0


def test_percentile_refuses_no_values_and_an_out_of_range_q():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="0..100"):
        percentile([1.0], 101)


def test_summarize_leaves_out_missing_values_and_reports_none_when_nothing_is_left():
    assert summarize([1.0, None, 3.0]) == {"n": 2, "p50": 2.0, "p95": 2.9, "max": 3.0, "mean": 2.0}
    assert summarize([None]) == {"n": 0, "p50": None, "p95": None, "max": None, "mean": None}


def _timing(start: float = 100.0) -> dict:
    return {
        "boot": {"start": start, "end": start + 1.0},
        "setup": {"start": start + 1.0, "end": start + 1.5},
        "agent": {"start": start + 1.5, "end": start + 4.5, "model": {"duration": 0.5}, "harness": {"duration": 2.5}},
        "finalize": {"start": start + 4.5, "end": start + 4.5},
        "scoring": {"start": start + 4.5, "end": start + 4.75},
    }


def test_a_rollout_ends_when_its_container_is_destroyed_and_overhead_excludes_model_time():
    row = rollout_row(_timing(), destroyed_at=105.25)
    assert row["boot"] == 1.0 and row["setup"] == 0.5 and row["scoring"] == 0.25
    assert row["agent_model"] == 0.5 and row["agent_harness"] == 2.5 and row["finalize"] == 0.0
    assert row["teardown"] == pytest.approx(0.5)
    assert row["total"] == pytest.approx(5.25)
    assert row["overhead"] == pytest.approx(4.75)


def test_without_a_container_a_rollout_ends_at_its_last_span_and_has_no_teardown():
    row = rollout_row(_timing())
    assert row["teardown"] is None
    assert row["total"] == pytest.approx(4.75)


def test_a_pooled_rollout_runs_from_its_claim_to_its_score_and_its_background_teardown_is_reported_apart():
    # its box was created at 50 (warm, waiting), claimed at 99.9, destroyed in the background at 107
    row = rollout_row(_timing(), destroyed_at=107.0, created_at=50.0, claim={"pooled": True, "claim_start": 99.9})
    assert row["start"] == pytest.approx(99.9) and row["end"] == pytest.approx(104.75)
    assert row["boot"] == pytest.approx(1.1)  # the claim and the agent's boot, not the box's idle wait
    assert row["teardown"] == pytest.approx(2.25)  # reported, out of `total`
    assert row["total"] == pytest.approx(4.85) and row["overhead"] == pytest.approx(4.35)
    unpooled = rollout_row(_timing(), destroyed_at=107.0, created_at=99.5)
    assert unpooled["start"] == 99.5 and unpooled["total"] == pytest.approx(7.5)


def test_phases_a_rollout_never_reached_are_missing_not_zero():
    timing = {"boot": {"start": 100.0, "end": 101.0}, "setup": {"start": 101.0, "end": None}}
    row = rollout_row(timing)
    assert row["setup"] is None and row["scoring"] is None and row["agent_model"] is None
    summaries = phase_summaries([row, rollout_row(_timing())])
    assert summaries["boot"]["n"] == 2
    assert summaries["scoring"]["n"] == 1


def test_throughput_is_none_when_nothing_ran_or_no_time_passed():
    assert throughput(8, 4.0) == 2.0
    assert throughput(0, 4.0) is None
    assert throughput(3, 0.0) is None
    assert throughput(3, None) is None


def test_goal_ratios_compare_with_the_docker_run_floor_and_say_whether_each_goal_is_met():
    goals = goal_ratios(overhead_c1=0.5, floor_run_c1=0.4, throughput_c8=2.0, floor_throughput_c8=5.0)
    assert goals["overhead_ratio"] == pytest.approx(1.25) and goals["overhead_met"] is True
    assert goals["throughput_ratio"] == pytest.approx(0.4) and goals["throughput_met"] is False
    unmeasured = goal_ratios(None, 0.4, 2.0, None)
    assert unmeasured["overhead_ratio"] is None and unmeasured["overhead_met"] is None
    assert unmeasured["throughput_ratio"] is None


def test_a_box_created_before_the_trace_boots_counts_from_its_creation():
    # The lean path's env starts the box before the agent's boot span begins.
    row = rollout_row(_timing(), destroyed_at=105.25, created_at=99.6)
    assert row["boot"] == pytest.approx(1.4)
    assert row["total"] == pytest.approx(5.65) and row["start"] == 99.6
    # A box created inside the boot span (the stock path) changes nothing.
    assert rollout_row(_timing(), destroyed_at=105.25, created_at=100.2) == rollout_row(_timing(), destroyed_at=105.25)


def test_the_goals_include_cpu_per_rollout_and_its_docker_side_at_the_issue_s_thresholds():
    goals = goal_ratios(0.5, 0.4, 3.0, 5.0, cpu_per_rollout=0.8, docker_cpu_per_rollout=0.61)
    assert goals["throughput_met"] is True  # 0.6 × the floor is the goal
    assert goals["cpu_met"] is True and goals["cpu_goal"] == 0.8
    assert goals["docker_cpu_met"] is False and goals["docker_cpu_goal"] == 0.6
    assert goal_ratios(None, None, None, None)["cpu_met"] is None


def test_the_best_level_is_the_highest_throughput_and_the_lowest_level_on_a_tie():
    assert best_level({1: 0.5, 8: 3.0, 32: 2.0}) == (8, 3.0)
    assert best_level({1: 2.0, 8: 2.0, 32: None}) == (1, 2.0)
    assert best_level({1: None}) is None


def test_docker_cli_cpu_is_what_vf_eval_reaped_less_its_other_children():
    samples = [
        (0.0, {10: ("python3", 1.0)}),  # a tool server, alive
        (0.3, {10: ("python3", 1.5), 11: ("docker", 0.01)}),  # 0.3 s of docker CLI reaped so far
        (2.0, {11: ("docker", 0.02)}),  # the tool server (last seen at 1.5 s) was reaped too
    ]
    assert docker_cli_seconds(samples) == pytest.approx([0.0, 0.3, 0.5])
