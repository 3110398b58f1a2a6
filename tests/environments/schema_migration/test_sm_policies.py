"""Scripted policies over 20 dev tasks, through the real toolset logic in-process: the scoring ranks them."""

import statistics

import pytest
from arena_kit.scripted import SHORTCUT_CEILING, SHORTCUT_PREFIX, shortcut_ceiling
from arena_kit.rewrite.rules import match_post
from arena_testkit.migration_sim import Episode, play
from schema_migration.generate import HELDOUT_ROWS, seeds
from schema_migration.mistakes import MISTAKES
from schema_migration.policies import POLICIES, SHORTCUTS
from schema_migration.score import MISS_CAP
from schema_migration.taskset import heldout_secrets

SEEDS = list(seeds("dev", 20))


@pytest.fixture(scope="module")
def rewards() -> dict[str, dict[int, Episode]]:
    return {name: {seed: play(policy, seed) for seed in SEEDS} for name, policy in POLICIES.items()}


def _score(rewards, name: str, seed: int) -> float:
    return rewards[name][seed].reward


@pytest.mark.slow
def test_the_oracle_scores_at_least_0_98_on_every_task(rewards):
    low = {
        seed: ep.grade.reason if ep.grade else "no submission"
        for seed, ep in rewards["oracle"].items()
        if ep.reward < 0.98
    }
    assert not low


@pytest.mark.slow
def test_the_oracle_rehearses_once_rolls_back_and_submits_within_the_free_statements(rewards):
    for ep in rewards["oracle"].values():
        assert ep.state.statements_used == 2
        assert [s.action.name for s in ep.steps] == ["schema", "execute", "execute", "rollback", "submit_migration"]
        assert "committed" in ep.steps[2].result and "restored" in ep.steps[3].result


@pytest.mark.parametrize(
    ("name", "margin"), [("exhaustive", 0.15), ("impatient", 0.3), ("hard_coder", 0.3), ("spammer", 0.3)]
)
@pytest.mark.slow
def test_degenerate_policies_score_well_below_the_oracle_on_every_task(rewards, name, margin):
    for seed in SEEDS:
        assert _score(rewards, name, seed) <= _score(rewards, "oracle", seed) - margin, (name, seed)


@pytest.mark.slow
def test_the_hard_coder_scores_like_the_staller_who_submits_nothing(rewards):
    assert max(ep.reward for ep in rewards["hard_coder"].values()) <= 0.05


@pytest.mark.slow
def test_the_exhaustive_policy_spends_the_whole_budget_and_still_submits_the_right_migration(rewards):
    for ep in rewards["exhaustive"].values():
        assert ep.state.statements_used == ep.state.statement_budget
        assert ep.grade is not None and ep.grade.score == 1.0
        assert "budget spent" in ep.steps[-2].result


@pytest.mark.slow
def test_the_hard_coder_reads_every_visible_row_it_hard_codes(rewards):
    for ep in rewards["hard_coder"].values():
        reads = [s for s in ep.steps if s.tool_is("execute")]
        assert reads and all("(" in s.result and "truncated" not in s.result for s in reads)
        assert ep.grade is not None and ep.grade.row_stats is not None and ep.grade.row_stats.lost > 0


@pytest.mark.slow
def test_policies_are_deterministic():
    seed = SEEDS[3]
    for policy in POLICIES.values():
        a, b = play(policy, seed, heldout=100), play(policy, seed, heldout=100)
        assert [(s.action, s.result) for s in a.steps] == [(s.action, s.result) for s in b.steps]
        assert a.reward == b.reward


def test_every_classic_mistake_is_published_as_a_shortcut_under_the_gates_default_ceiling():
    # A missed requirement caps the grade at MISS_CAP, below the default: no shortcut needs its own ceiling.
    assert set(SHORTCUTS) == {f"{SHORTCUT_PREFIX}{m}" for m in MISTAKES} and set(SHORTCUTS) <= set(POLICIES)
    assert {shortcut_ceiling(p) for p in SHORTCUTS.values()} == {SHORTCUT_CEILING}
    assert MISS_CAP < SHORTCUT_CEILING


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
@pytest.mark.slow
def test_each_wrong_migration_policy_scores_at_most_the_miss_cap_and_half_below_the_oracle(rewards, name):
    # The gate's rule: each shortcut's mean ≤ its ceiling and ≤ oracle − 0.5; here per task, at the cap.
    scores = [_score(rewards, name, seed) for seed in SEEDS]
    oracle = statistics.mean(_score(rewards, "oracle", seed) for seed in SEEDS)
    high = [(seed, rewards[name][seed].grade.reason) for seed in SEEDS if _score(rewards, name, seed) > MISS_CAP]
    assert not high
    assert statistics.mean(scores) <= min(MISS_CAP, oracle - 0.5)


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
@pytest.mark.slow
def test_wrong_migration_policies_rehearse_like_the_oracle_and_trip_no_rule(rewards, name):
    for seed, ep in rewards[name].items():
        assert [s.action.name for s in ep.steps] == ["schema", "execute", "execute", "rollback", "submit_migration"]
        assert "committed" in ep.steps[2].result, (seed, ep.steps[2].result[:300])
        secrets = heldout_secrets(seed, HELDOUT_ROWS)
        assert not [s.action.name for s in ep.steps if match_post(s.result or "", secrets)]
