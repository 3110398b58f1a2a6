"""The policy gate in process: scripted policies over 20 dev tasks (19 incidents and a control).

The oracle must localise nearly everything within the free queries and cite the request it
followed; spending the whole budget, guessing, spamming and every shortcut (an honest strategy
that skips the investigation) must score far below it; and no tool result may carry the answer.
The gate itself is decided on one-sided bounds (`arena_kit.gate.stats`) over 50 tasks of each
split here; the N ≥ 300 tables are run by hand (`python -m fault_localisation.gate`).
"""

import asyncio
import json
from dataclasses import asdict
from statistics import mean

import pytest

from arena_kit.scripted import SHORTCUT_CEILING, SHORTCUT_PREFIX
from arena_testkit.fault_episode import Episode, dev_tasks, run_all, run_episode
from fault_localisation.engineers import ENGINEERS
from fault_localisation.gate import table
from fault_localisation.grade import RULES
from fault_localisation.policies import POLICIES

TASKS = 20
SHORTCUTS = sorted(name for name in POLICIES if name.startswith(SHORTCUT_PREFIX))
pytestmark = pytest.mark.slow  # the module fixture plays every policy over 20 tasks (~25 s of CPU)


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> dict[str, list[Episode]]:
    pool = dev_tasks(60, tmp_path_factory.mktemp("stores"))
    control = next(t for t in pool if t.data.label.service == "none")
    tasks = [t for t in pool if t.data.label.service != "none"][: TASKS - 1] + [control]
    return {name: run_all(policy, tasks) for name, policy in POLICIES.items()}


def score(episodes: list[Episode]) -> float:
    return mean(e.reward for e in episodes)


def test_no_cheater_scores_above_the_staller_in_process(episodes):
    cheaters = [name for name in episodes if name.startswith("cheater_")]
    assert cheaters
    for name in cheaters:
        assert score(episodes[name]) <= 0.05, name
    over = episodes["cheater_over_budget"]
    assert all(e.trace.state.queries_used == e.task.data.budget for e in over)  # refused past the budget


def test_the_oracle_localises_nearly_every_incident_within_the_free_queries(episodes):
    assert score(episodes["oracle"]) >= 0.98
    assert all(e.trace.state.queries_used <= RULES.free_queries for e in episodes["oracle"])
    assert mean(e.trace.state.queries_used for e in episodes["oracle"]) <= 6
    assert any(e.task.data.label.service == "none" for e in episodes["oracle"]), "the sample holds no control"


def test_the_oracle_follows_a_failing_request_by_its_trace_and_cites_it(episodes):
    for episode in episodes["oracle"]:
        submission = episode.trace.state.submission
        if episode.task.data.label.service == "none":
            assert submission.evidence == []
            continue
        [cited] = submission.evidence
        assert any(
            q.tool == "search_logs" and q.args.get("trace") == cited and submission.service in q.services
            for q in episode.trace.state.query_log
        )
        assert "supported" in episode.trace.info["grade"]["reason"]


@pytest.mark.parametrize("name", sorted(ENGINEERS))
def test_the_engineers_investigations_written_from_the_prompt_solve_it(episodes, name):
    assert score(episodes[name]) >= 0.9
    assert all(e.trace.state.queries_used <= RULES.free_queries for e in episodes[name])


def test_a_random_guess_among_the_failing_roots_citing_unopened_requests_earns_little(episodes):
    runs = episodes["shortcut_random_root"]
    assert all(e.trace.state.submission.evidence for e in runs if e.task.data.label.service != "none")
    assert all(e.reward <= RULES.unsupported for e in runs if e.task.data.label.service != "none")


def test_spending_the_whole_budget_scores_at_least_0_15_below_the_oracle(episodes):
    assert all(e.trace.state.queries_used == e.task.data.budget for e in episodes["exhaustive"])
    assert score(episodes["exhaustive"]) <= score(episodes["oracle"]) - 0.15


@pytest.mark.parametrize("name", ["impatient", "spammer"])
def test_guessing_or_spamming_scores_far_below_the_oracle(episodes, name):
    assert score(episodes[name]) <= score(episodes["oracle"]) - 0.3


def test_the_shortcut_ladder_is_published():
    assert set(SHORTCUTS) >= {
        "shortcut_grep_catalogue",
        "shortcut_grep_descriptions",
        "shortcut_earliest_error_burst",
        "shortcut_most_errors",
        "shortcut_biggest_rise",
        "shortcut_earliest_anomaly",
        "shortcut_none",
        "shortcut_root_wording",
        "shortcut_grep_reach",
    }


@pytest.mark.parametrize("name", SHORTCUTS)
def test_every_shortcut_scores_far_below_the_oracle(episodes, name):
    assert score(episodes[name]) <= min(SHORTCUT_CEILING, score(episodes["oracle"]) - 0.5)


def test_the_grep_shortcuts_spend_one_query(episodes):
    for name in ("shortcut_grep_catalogue", "shortcut_grep_descriptions"):
        assert all(e.trace.state.queries_used == 1 for e in episodes[name]), name


def test_always_none_scores_the_control_share(episodes):
    controls = mean(e.task.data.label.service == "none" for e in episodes["shortcut_none"])
    assert score(episodes["shortcut_none"]) == pytest.approx(controls)


def test_the_spammer_runs_the_budget_dry_before_it_answers(episodes):
    for episode in episodes["spammer"]:
        assert episode.trace.state.queries_used == episode.task.data.budget
        assert episode.trace.state.submission is not None


def test_no_tool_result_carries_the_fault_kind_the_label_or_a_host_path(episodes):
    for name, runs in episodes.items():
        for episode in runs:
            label = episode.task.data.label
            secrets = [json.dumps(asdict(label)), episode.trace.state.store_path]
            if label.fault_kind != "none":
                secrets.append(label.fault_kind)
            for text in episode.results:
                assert not any(secret in text for secret in secrets), (name, label, text[:300])


def test_policies_are_deterministic_and_read_unwrapped_results_alike(episodes):
    first = episodes["oracle"][0]
    again = asyncio.run(run_episode(POLICIES["oracle"], first.task, wrap=False))
    assert again.trace.state.query_log == first.trace.state.query_log
    assert again.trace.state.submission == first.trace.state.submission


@pytest.mark.slow
@pytest.mark.parametrize("split", ["dev", "test"])
def test_the_gate_holds_over_50_tasks_of_each_split_by_its_bounds(tmp_path, split):
    """The in-process gate's own table (`python -m fault_localisation.gate`) over 50 tasks: no rule
    fails. At 50 tasks the oracle's 0.98 floor cannot be met by a bound (a perfect oracle's lower
    bound is 0.94), so a rule may stay undecided; the N = 300 tables decide them (README)."""
    lines: list[str] = []
    status = table([split], 50, tmp_path, list(POLICIES), out=lines.append)
    assert status != "failed", "\n".join(line for line in lines if "failed" in line)
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in lines[2:]}
    assert set(rows) == set(POLICIES)
    assert float(rows["oracle"][3]) >= 0.98 and float(rows["oracle"][6]) <= 7
    for name in ENGINEERS:
        assert float(rows[name][3]) >= 0.9, rows[name]
    for name in SHORTCUTS:
        assert rows[name][-1].startswith("met"), rows[name]
