"""The learned-shortcut library: plans driven offline, the matrix, the "none" threshold, the table learner, weights, and the whole adversary on a toy environment."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from arena_kit.adversaries.learned.adversary import learned_adversary
from arena_kit.adversaries.learned.dataset import matrix
from arena_kit.adversaries.learned.estimators import PositiveRate, positive_rate
from arena_kit.adversaries.learned.observe import NONE, Case, Ground, Learner, Rows, observe
from arena_kit.adversaries.learned.offline import Plan, drive
from arena_kit.adversaries.learned.play import choose
from arena_kit.adversaries.learned.train import Fitted, none_threshold, top
from arena_kit.contract.adversary import Split
from arena_kit.policy import CallTool

SLOTS = 8
Toy = tuple[str, int, int]
"""A toy task: its id, its seed, and the slot that holds the answer."""


class Tools:
    def __init__(self, task: Toy) -> None:
        self.task, self.charged = task, 0

    def __call__(self, call: CallTool) -> dict[str, Any]:
        self.charged += 1
        return {"slot": call.arguments["slot"], "hot": call.arguments["slot"] == self.task[2]}


def toy_ground(biased: bool) -> Ground[Toy, int]:
    """Tasks whose answer slot is uniform, or (biased) slot 3 half the time; naming the slot scores 1."""

    def tasks(split: Split, count: int) -> list[Toy]:
        first = {"train": 0, "dev": 10_000, "test": 20_000}[split]
        out = []
        for seed in range(first, first + count):
            rng = random.Random(seed)
            out.append((f"{split}-{seed}", seed, 3 if biased and rng.random() < 0.5 else rng.randrange(SLOTS)))
        return out

    def reward(case: Case[Toy, int], choice: str) -> float:
        return float(choice == f"slot{case.task[2]}")

    return Ground(
        tasks=tasks,
        task_id=lambda t: t[0],
        context=lambda t: SLOTS,
        executor=Tools,
        root=lambda t: f"slot{t[2]}",
        reward=reward,
    )


def blind(slots: int) -> Plan[None]:
    yield from ()


def peek_first(slots: int) -> Plan[bool]:
    got = yield CallTool("read", {"slot": 0})
    return bool(got["hot"])


def by_position(slots: int, seen: object) -> Rows:
    return {f"slot{i}": {"position": float(i)} for i in range(slots)}


PRIOR = Learner("prior", blind, by_position, positive_rate)


def test_drive_sends_each_result_back_and_returns_what_the_plan_saw() -> None:
    tools = Tools(("t", 0, 0))
    assert drive(peek_first(SLOTS), tools) is True and tools.charged == 1


def test_observe_counts_each_learner_s_queries_from_zero() -> None:
    learners: list[Learner[int, Any]] = [PRIOR, Learner("peek", peek_first, by_position, positive_rate)]
    cases = observe(learners, [("t", 0, 5)], toy_ground(False))
    assert [c.charged for c in cases["prior"]] == [0] and [c.charged for c in cases["peek"]] == [1]
    assert cases["peek"][0].root == "slot5"


def _case(rows: Rows | None, root: str) -> Case[None, None]:
    return Case(None, None, rows, 0, root)


def test_the_matrix_skips_quiet_cases_but_keeps_each_row_s_case_index() -> None:
    cases = [_case(None, NONE), _case({"b": {"x": 2.0}, "a": {"x": 1.0}}, "b")]
    m = matrix(cases)
    assert m.keys == ["x"] and m.X == [[1.0], [2.0]] and m.y == [0, 1] and m.group == [1, 1]
    assert m.candidate == ["a", "b"]


def test_the_none_threshold_answers_none_where_that_pays() -> None:
    # Case 0: right at 0.9. Case 1: wrong at 0.4, nothing to find. Case 2: quiet control.
    cases = [_case({"a": {}}, "a"), _case({"b": {}}, NONE), _case(None, NONE)]
    best = top([0.9, 0.4], [0, 1], ["a", "b"])
    threshold, cv = none_threshold(cases, best)
    assert threshold == 0.9 and cv["oof_top1_with_none"] == 1.0 and cv["oof_top1"] == pytest.approx(1 / 3)
    assert none_threshold(cases, best, midpoint=True)[0] == pytest.approx(0.65)


def test_the_table_learner_rates_each_row_and_an_unseen_one_at_the_overall_rate() -> None:
    model = PositiveRate().fit([[0.0], [0.0], [1.0], [1.0]], [1, 1, 0, 0])
    probs = model.predict_proba([[0.0], [1.0], [7.0]])[:, 1]
    assert list(probs) == [pytest.approx(2.5 / 3), pytest.approx(0.5 / 3), 0.5]


def test_choose_names_the_top_candidate_ties_to_the_first_name_and_none_below_the_threshold() -> None:
    rows = {"b": {"position": 0.0}, "a": {"position": 0.0}, "c": {"position": 1.0}}
    fitted = Fitted(PositiveRate().fit([[0.0], [1.0]], [1, 0]), ["position"])
    assert choose(fitted, rows)[0] == "a"
    assert choose(Fitted(fitted.model, ["position"], threshold=0.9), rows)[0] == NONE
    assert choose(fitted, None) == (NONE, 0.0)


@pytest.mark.parametrize(("biased", "status"), [(False, "met"), (True, "failed")])
def test_a_position_prior_scores_only_where_the_generator_favours_a_position(biased: bool, status: str) -> None:
    run = learned_adversary(PRIOR, toy_ground(biased), "dev", 200, train_tasks=400, ceiling=0.25, abstain=False)
    assert len(run.rewards) == 200 and run.verdict().status == status, run.verdict().text


def _gradient_boosting_case() -> tuple[Any, Sequence[list[float]], list[str]]:
    from arena_kit.adversaries.learned.estimators import gradient_boosting

    rng = random.Random(7)
    names = ["f0", "f1", "f2"]
    X = [[rng.choice([0.0, 1.0, rng.random(), rng.gauss(0, 3)]) for _ in names] for _ in range(300)]
    y = [int(row[0] + row[1] > 1.2 or rng.random() < 0.05) for row in X]
    return gradient_boosting(3).fit(X, y), X, names


@pytest.mark.slow
def test_an_exported_ensemble_predicts_what_scikit_learn_did() -> None:
    pytest.importorskip("sklearn")
    from arena_kit.adversaries.learned.weights import Model, export

    clf, X, names = _gradient_boosting_case()
    model = Model.from_json(export(clf, names, 0.5, {"note": "test"}))
    assert model.meta == {"note": "test"} and model.threshold == 0.5
    for row, p in zip(X[:60], clf.predict_proba(X[:60])[:, 1]):
        assert model.probability(dict(zip(names, row))) == pytest.approx(float(p), abs=1e-9)


def test_a_model_of_another_format_is_refused() -> None:
    from arena_kit.adversaries.learned.weights import Model

    with pytest.raises(ValueError, match="format 2"):
        Model.from_json({"format": 2})
