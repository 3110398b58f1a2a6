"""The in-process gate (`python -m fault_localisation.gate`): its rules, decided on one-sided bounds,
and its table over real episodes."""

import pytest

from fault_localisation.episode import Scored
from fault_localisation.gate import Row, main, render, rules_for, status_of


def _row(name: str, rewards: list[float]) -> Row:
    return Row(name, "dev", Scored({f"t{i}": [r] for i, r in enumerate(rewards)}, 3.0, 0, 0.0, 0))


def test_each_policy_is_held_to_its_rule():
    assert [text for text, _ in rules_for("oracle")] == ["lower ≥ 0.98"]
    assert [text for text, _ in rules_for("investigate_graph_walk")] == ["lower ≥ 0.9"]
    assert [text for text, _ in rules_for("shortcut_learned")] == ["upper ≤ 0.35", "mean ≤ 0.2"]
    assert [text for text, _ in rules_for("learner_forest_windows")] == ["upper ≤ 0.35", "mean ≤ 0.2"]
    assert "mean ≤ 0.1" in [text for text, _ in rules_for("shortcut_random_root")]
    assert rules_for("investigate_names") == [] and rules_for("spammer") == []


def test_a_shortcut_is_decided_by_its_upper_bound_not_its_mean():
    # Mean 0.30 under the 0.35 ceiling but over 0.20: failed on the mean. Mean 0.14 over 14 tasks:
    # the upper bound straddles 0.35, so undecided; over 300 tasks it is met.
    assert render(_row("shortcut_x", [1.0] * 3 + [0.0] * 7), {})[1] == "failed"
    assert render(_row("shortcut_x", [1.0] * 2 + [0.0] * 12), {})[1] == "undecided"
    assert render(_row("shortcut_x", [1.0] * 45 + [0.0] * 255), {})[1] == "met"
    # The oracle's 0.98 floor: a perfect oracle over 50 tasks cannot meet it by a bound, over 300 it does.
    assert render(_row("oracle", [1.0] * 50), {})[1] == "undecided"
    assert render(_row("oracle", [1.0] * 300), {})[1] == "met"
    assert render(_row("oracle", [1.0] * 280 + [0.0] * 20), {})[1] == "failed"
    assert status_of(["met", "undecided", "met"]) == "undecided" and status_of(["undecided", "failed"]) == "failed"


def test_the_budget_rule_pairs_the_exhaustive_policy_with_the_oracle():
    oracle = {f"t{i}": [1.0] for i in range(100)}
    line, status = render(_row("exhaustive", [0.48] * 100), {"oracle": oracle})
    assert status == "met" and line.endswith("| − oracle upper ≤ −0.15 | met |")
    line, status = render(_row("exhaustive", [0.9] * 100), {"oracle": oracle})
    assert status == "failed" and "(exhaustive − oracle -0.100)" in line
    assert render(_row("exhaustive", [0.48] * 100), {})[1] == "undecided"  # no oracle run


@pytest.mark.slow
def test_the_command_prints_the_table_and_exits_by_the_verdict(tmp_path, capsys):
    assert (
        main(
            [
                "--splits",
                "dev",
                "--tasks",
                "3",
                "--store-dir",
                str(tmp_path),
                "--policy",
                "oracle",
                "--policy",
                "shortcut_none",
            ]
        )
        == 3
    )  # three tasks decide no bound
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| policy | split | N | mean | lower | upper |")
    assert out[2].startswith("| oracle | dev | 3 | 1.000 |") and out[-1] == "gate: undecided"
    with pytest.raises(SystemExit):
        main(["--policy", "no_such_policy"])


@pytest.mark.slow
def test_the_learners_are_fit_on_train_and_gated_on_each_split_within_the_free_queries(tmp_path, capsys):
    pytest.importorskip("sklearn")
    main(
        [
            "--splits",
            "dev",
            "test",
            "--tasks",
            "4",
            "--learners",
            "16",
            "--store-dir",
            str(tmp_path),
            "--policy",
            "oracle",
        ]
    )
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| learner_")]
    assert sorted((r[0], r[1]) for r in rows) == [
        (f"| learner_{n}", s) for n in ("forest_windows", "logistic_names") for s in ("dev", "test")
    ]
    assert all(r[2] == "4" and float(r[6]) <= 7 and r[8] == "upper ≤ 0.35; mean ≤ 0.2" for r in rows)
    assert len(list(tmp_path.glob("*.sqlite"))) == 8  # the 16 train stores are deleted once seen


@pytest.mark.slow
def test_a_learner_as_a_contract_adversary_scores_each_task_as_its_gate_row_does(tmp_path):
    pytest.importorskip("sklearn")
    from arena_kit.adversaries.learned.adversary import learned_adversary
    from fault_localisation.episode import split_tasks
    from fault_localisation.learned.adversaries import LEARNERS, evaluate, fit, ground, observe

    learner = LEARNERS[0]
    run = learned_adversary(learner, ground(tmp_path), "dev", 4, train_tasks=16, ceiling=0.35)
    model, keys, threshold = fit(
        learner, observe([learner], split_tasks("train", 16, tmp_path), tmp_path)[learner.name], 0
    )
    scored = evaluate(learner, model, keys, threshold, split_tasks("dev", 4, tmp_path), tmp_path)
    assert run.rewards == scored.rewards and len(run.rewards) == 4
