"""The gate's rules, one by one, on hand-made score tables (the full probe runs in docker tests)."""

from pathlib import Path

from arena.evalrun import EvalOutcome
from arena_kit.records import AuditRecord
from arena.traces import Episode
from arena.probe import PolicyScore, gate, score_outcome


def _s(policy: str, mean: float, env: str = "e", failed: int = 0, rewrites: int = 0) -> PolicyScore:
    return PolicyScore(env=env, policy=policy, episodes=4, failed=failed, mean=mean, min=mean, max=mean, turns=3, budget_used=None, rewrites=rewrites)


GOOD = [_s("staller", 0.0), _s("oracle", 1.0), _s("exhaustive", 0.7), _s("impatient", 0.1), _s("spammer", 0.0), _s("cheater_x", 0.02)]


def _rules(scores) -> set[str]:
    return {f.rule for f in gate(scores)}


def test_a_healthy_table_passes():
    assert gate(GOOD) == []


def test_each_rule_fails_on_its_own_violation():
    swap = lambda name, mean: [s if s.policy != name else _s(name, mean) for s in GOOD]  # noqa: E731
    assert _rules(swap("staller", 0.01)) >= {"staller-scores-zero"}
    assert _rules(swap("oracle", 0.97)) >= {"oracle-reaches-ceiling"}
    assert _rules(swap("exhaustive", 0.9)) == {"budget-binds"}
    assert _rules(swap("impatient", 0.75)) == {"impatient-below-oracle"}
    assert _rules(swap("spammer", 0.71)) == {"spammer-below-oracle"}
    assert _rules(swap("cheater_x", 0.06)) == {"cheaters-gain-nothing"}


def test_a_rule_firing_on_an_honest_policy_fails_the_gate_but_not_on_a_cheater():
    for honest in ("staller", "oracle", "exhaustive", "impatient", "spammer"):
        scores = [s if s.policy != honest else _s(honest, s.mean, rewrites=2) for s in GOOD]
        assert _rules(scores) == {"honest-policies-untouched"}, honest
    cheater_denied = [s if s.policy != "cheater_x" else _s("cheater_x", 0.0, rewrites=4) for s in GOOD]
    assert gate(cheater_denied) == []


def test_failed_episodes_fail_the_gate_even_with_good_means():
    scores = [s if s.policy != "oracle" else _s("oracle", 1.0, failed=1) for s in GOOD]
    assert _rules(scores) == {"episodes-ran"}


def test_environments_are_gated_separately():
    other = [_s(s.policy, s.mean, env="f") for s in GOOD if s.policy != "oracle"]
    failures = gate([*GOOD, *other])
    assert [(f.env, f.rule) for f in failures] == [("f", "policies-present")]


def test_score_outcome_counts_the_rewrites_recorded_in_each_episode():
    record = AuditRecord(
        id="r", run="run", rollout="t", harness="bash", environment="e", task="t", rule="net-egress", stage="pre",
        tool="bash", arguments={}, original_sha256="0" * 64, original_excerpt="", replacement="DENIED", time=0.0,
    )

    def episode(reward: float, rewrites: int) -> Episode:
        return Episode(
            task="t", ok=True, errors=[], stop_condition="agent_completed", reward=reward, rewards={},
            metrics={"queries_used": 3.0}, info={}, timing={}, turns=2, rewrites=(record,) * rewrites,
        )

    outcome = EvalOutcome(run_dir=Path("run"), returncode=0, episodes=[episode(0.0, 1), episode(0.5, 0), episode(0.0, 2)])
    score = score_outcome("e", "cheater_x", outcome)
    assert (score.episodes, score.rewrites, score.mean, score.budget_used) == (3, 3, 0.5 / 3, 3.0)


def test_shortcuts_must_stay_under_their_ceiling_and_far_below_the_oracle():
    assert gate([*GOOD, _s("shortcut_grep", 0.35)]) == []
    assert _rules([*GOOD, _s("shortcut_grep", 0.36)]) == {"shortcuts-fail"}
    declared = PolicyScore(env="e", policy="shortcut_schema_only", episodes=4, failed=0, mean=0.45, min=0.45,
                           max=0.45, turns=3, budget_used=None, ceiling=0.5)
    assert gate([*GOOD, declared]) == []
    weak_oracle = [s if s.policy != "oracle" else _s("oracle", 0.98) for s in GOOD]
    assert _rules([*weak_oracle, _s("shortcut_grep", 0.49)]) == {"shortcuts-fail"}  # 0.49 > 0.98 − 0.5


def test_shortcuts_are_honest_policies_so_a_rule_firing_on_one_fails_the_gate():
    assert _rules([*GOOD, _s("shortcut_grep", 0.1, rewrites=1)]) == {"honest-policies-untouched"}


def test_roles_follow_the_published_names():
    from arena.probe import role_of

    assert [role_of(n) for n in ("staller", "oracle", "exhaustive", "shortcut_none", "investigate_names", "cheater_x",
                                 "hard_coder")] == [
        "staller", "standard", "standard", "shortcut", "investigation", "cheater", "cheater"]


def test_an_investigation_is_reported_not_gated_but_must_stay_untouched_by_the_rules():
    assert _rules([*GOOD, _s("investigate_names", 0.9)]) == set()
    assert _rules([*GOOD, _s("investigate_names", 0.9, rewrites=1)]) == {"honest-policies-untouched"}


def test_the_difficulty_table_has_a_column_per_knob_value():
    from arena.probe import render_difficulty

    table = render_difficulty("decoys", {"0": [_s("oracle", 1.0), _s("shortcut_grep", 1.0)],
                                         "3": [_s("oracle", 0.99), _s("shortcut_grep", 0.2)]})
    header, oracle, grep = table.splitlines()
    assert "decoys=0" in header and "decoys=3" in header
    assert oracle.split()[-2:] == ["1.000", "0.990"] and grep.split()[-2:] == ["1.000", "0.200"]
