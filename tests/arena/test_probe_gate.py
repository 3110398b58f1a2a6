"""The gate's rules, one by one, on hand-made score tables, decided by one-sided bounds (the full
probe runs in docker tests)."""

from pathlib import Path

from arena.evalrun import EvalOutcome
from arena.probe import report_gate
from arena.probe_rules import PolicyScore, exit_code, gate, gate_verdict, render_rules, role_of, score_outcome
from arena.traces import Episode
from arena_kit.gate.stats import estimate
from arena_kit.records import AuditRecord

TASKS = 50


def _s(
    policy: str,
    mean: float | None = None,
    *,
    values: list[float] | None = None,
    env: str = "e",
    failed: int = 0,
    rewrites: int = 0,
    ceiling: float | None = None,
) -> PolicyScore:
    values = [mean if mean is not None else 0.0] * TASKS if values is None else values
    rewards = {f"t{i:03d}": [v] for i, v in enumerate(values)}
    est = estimate(rewards)
    return PolicyScore(
        env=env,
        policy=policy,
        episodes=len(values) + failed,
        failed=failed,
        mean=est.mean,
        min=min(values),
        max=max(values),
        turns=3,
        budget_used=None,
        rewrites=rewrites,
        ceiling=ceiling,
        tasks=est.tasks,
        low=est.low,
        high=est.high,
        lower=est.lower,
        upper=est.upper,
        method=est.method,
        rewards=rewards,
    )


GOOD = [
    _s("staller", 0.0),
    _s("oracle", 1.0),
    _s("exhaustive", 0.5),
    _s("impatient", 0.1),
    _s("spammer", 0.0),
    _s("cheater_x", 0.0),
]


def _status(scores) -> dict[str, str]:
    """rule → its worst status (failed over undecided over met)."""
    worst: dict[str, str] = {}
    rank = {"met": 0, "undecided": 1, "failed": 2}
    for r in gate(scores):
        if rank[r.status] >= rank[worst.get(r.rule, "met")]:
            worst[r.rule] = r.status
    return worst


def _not_met(scores) -> dict[str, str]:
    return {rule: status for rule, status in _status(scores).items() if status != "met"}


def _swap(name: str, score: PolicyScore) -> list[PolicyScore]:
    return [s if s.policy != name else score for s in GOOD]


def test_a_healthy_table_meets_every_rule():
    assert _not_met(GOOD) == {} and gate_verdict(gate(GOOD)) == "passed" and exit_code(gate(GOOD)) == 0


def test_each_rule_fails_on_its_own_violation():
    assert _not_met(_swap("staller", _s("staller", values=[0.0] * 49 + [0.01]))) == {"staller-scores-zero": "failed"}
    assert _not_met(_swap("oracle", _s("oracle", 0.8)))["oracle-reaches-ceiling"] == "failed"
    assert _not_met(_swap("exhaustive", _s("exhaustive", 0.95))) == {"budget-binds": "failed"}
    assert _not_met(_swap("impatient", _s("impatient", 0.9))) == {"impatient-below-oracle": "failed"}
    assert _not_met(_swap("spammer", _s("spammer", 0.9))) == {"spammer-below-oracle": "failed"}
    assert _not_met(_swap("cheater_x", _s("cheater_x", 0.5))) == {"cheaters-gain-nothing": "failed"}
    assert exit_code(gate(_swap("cheater_x", _s("cheater_x", 0.5)))) == 1


def test_a_point_estimate_that_would_have_passed_is_undecided_when_its_bound_cannot_decide():
    # The old gate passed an oracle at 5 of 5 (mean 1.0 ≥ 0.98) and a shortcut measured at 0.32
    # over 50 tasks (≤ 0.35), where the interval is ±0.13.
    few = [_s(s.policy, values=[s.max or 0.0] * 5) for s in GOOD]
    status = _status(few)
    assert status["oracle-reaches-ceiling"] == "undecided" and gate_verdict(gate(few)) == "undecided"
    assert exit_code(gate(few)) == 3
    [oracle] = [r for r in gate(few) if r.rule == "oracle-reaches-ceiling"]
    assert oracle.tasks_needed == 29 and "run more tasks (about 29)" in oracle.detail
    lucky = _s("shortcut_grep", values=[1.0] * 16 + [0.0] * 34)  # 0.32
    assert _not_met([*GOOD, lucky]) == {"shortcuts-fail": "undecided"}


def test_a_cheater_scoring_nothing_is_decided_at_29_tasks_not_before():
    at = lambda n: [_s(s.policy, values=[s.max or 0.0] * n) for s in GOOD]  # noqa: E731
    assert _status(at(28))["cheaters-gain-nothing"] == "undecided"
    assert _status(at(29))["cheaters-gain-nothing"] == "met"


def test_a_rule_firing_on_an_honest_policy_fails_the_gate_but_not_on_a_cheater():
    for honest in ("staller", "oracle", "exhaustive", "impatient", "spammer"):
        scores = [s if s.policy != honest else _s(honest, values=[s.max or 0.0] * TASKS, rewrites=2) for s in GOOD]
        assert _not_met(scores) == {"honest-policies-untouched": "failed"}, honest
    assert _not_met(_swap("cheater_x", _s("cheater_x", 0.0, rewrites=4))) == {}


def test_failed_episodes_fail_the_gate_even_with_good_means():
    assert _not_met(_swap("oracle", _s("oracle", 1.0, failed=1))) == {"episodes-ran": "failed"}


def test_environments_are_gated_separately():
    other = [_s(s.policy, values=[s.max or 0.0] * TASKS, env="f") for s in GOOD if s.policy != "oracle"]
    failed = [(r.env, r.rule) for r in gate([*GOOD, *other]) if r.status != "met"]
    assert failed == [("f", "policies-present")]


def test_score_outcome_scores_by_task_and_counts_the_rewrites_recorded_in_each_episode():
    record = AuditRecord(
        id="r",
        run="run",
        rollout="t",
        harness="bash",
        environment="e",
        task="t",
        rule="net-egress",
        stage="pre",
        tool="bash",
        arguments={},
        original_sha256="0" * 64,
        original_excerpt="",
        replacement="DENIED",
        time=0.0,
    )

    def episode(task: str, reward: float, rewrites: int) -> Episode:
        return Episode(
            task=task,
            ok=True,
            errors=[],
            stop_condition="agent_completed",
            reward=reward,
            rewards={},
            metrics={"queries_used": 3.0},
            info={},
            timing={},
            turns=2,
            rewrites=(record,) * rewrites,
        )

    outcome = EvalOutcome(
        run_dir=Path("run"), returncode=0, episodes=[episode("a", 0.0, 1), episode("a", 0.5, 0), episode("b", 0.0, 2)]
    )
    score = score_outcome("e", "cheater_x", outcome)
    assert (score.episodes, score.rewrites, score.budget_used, score.tasks) == (3, 3, 3.0, 2)
    assert score.mean == 0.125  # one mean: task a 0.25, task b 0 (by episode it would be 0.167)
    assert score.rewards == {"a": [0.0, 0.5], "b": [0.0]} and score.pass_k is None


def test_a_failed_episode_is_named_by_its_stop_condition_and_a_turn_limit_is_no_failure():
    def episode(task: str, stop: str | None, ok: bool = True) -> Episode:
        return Episode(
            task=task,
            ok=ok,
            errors=[],
            stop_condition=stop,
            reward=0.0,
            rewards={},
            metrics={},
            info={},
            timing={},
            turns=40,
        )

    outcome = EvalOutcome(
        run_dir=Path("run"),
        returncode=0,
        episodes=[
            episode("a", "max_turns"),
            episode("b", "timeout_error", ok=False),
            episode("c", "timeout_error", ok=False),
            episode("d", None, ok=False),
        ],
    )
    score = score_outcome("e", "exhaustive", outcome)
    assert (score.failed, score.failed_stops) == (3, {"timeout_error": 2, "not ok": 1})
    (ran,) = [r for r in gate([score]) if r.rule == "episodes-ran"]
    assert ran.status == "failed" and "stopped by not ok ×1; stopped by timeout_error ×2" in ran.detail


def test_shortcuts_must_stay_under_their_ceiling_and_far_below_the_oracle():
    assert _not_met([*GOOD, _s("shortcut_grep", 0.2)]) == {}
    assert _not_met([*GOOD, _s("shortcut_grep", 0.6)]) == {"shortcuts-fail": "failed"}
    declared = _s("shortcut_schema_only", 0.3, ceiling=0.5)
    assert _not_met([*GOOD, declared]) == {}
    assert _not_met([*GOOD, _s("shortcut_schema_only", 0.45, ceiling=0.5)]) == {"shortcuts-fail": "undecided"}
    close = [r for r in gate([*GOOD, _s("shortcut_x", 0.7, ceiling=0.9)]) if r.rule == "shortcuts-fail"]
    assert [r.status for r in close] == ["met", "failed"] and close[1].subject == "shortcut_x − oracle"


def test_shortcuts_are_honest_policies_so_a_rule_firing_on_one_fails_the_gate():
    assert _not_met([*GOOD, _s("shortcut_grep", 0.1, rewrites=1)]) == {"honest-policies-untouched": "failed"}


def test_roles_follow_the_published_names():
    assert [
        role_of(n)
        for n in ("staller", "oracle", "exhaustive", "shortcut_none", "investigate_names", "cheater_x", "hard_coder")
    ] == ["staller", "standard", "standard", "shortcut", "investigation", "cheater", "cheater"]


def test_an_investigation_is_reported_not_gated_but_must_stay_untouched_by_the_rules():
    assert _not_met([*GOOD, _s("investigate_names", 0.9)]) == {}
    assert _not_met([*GOOD, _s("investigate_names", 0.9, rewrites=1)]) == {"honest-policies-untouched": "failed"}


def test_the_rules_table_prints_every_verdict_and_the_report_exits_3_when_undecided(tmp_path, capsys):
    few = [_s(s.policy, values=[s.max or 0.0] * 5) for s in GOOD]
    table = render_rules(gate(few))
    assert "[e] episodes-ran: met for all 6 policies" in table
    assert (
        "oracle-reaches-ceiling (oracle): undecided — oracle mean 1.000; undecided: run more tasks (about 29)" in table
    )
    assert "budget-binds (exhaustive − oracle): " in table
    assert report_gate(few, gate(few), tmp_path / "probe.json") == 3
    out, err = capsys.readouterr()
    assert (
        "gate undecided: no rule failed" in out
        and "GATE UNDECIDED [e] oracle-reaches-ceiling (oracle): run more tasks (about 29 tasks)" in err
    )
    assert "GATE FAILED" not in err


def test_the_difficulty_table_has_a_column_per_knob_value():
    from arena.probe import render_difficulty

    table = render_difficulty(
        "decoys",
        {"0": [_s("oracle", 1.0), _s("shortcut_grep", 1.0)], "3": [_s("oracle", 0.99), _s("shortcut_grep", 0.2)]},
    )
    header, oracle, grep = table.splitlines()
    assert "decoys=0" in header and "decoys=3" in header
    assert oracle.split()[-2:] == ["1.000", "0.990"] and grep.split()[-2:] == ["1.000", "0.200"]
