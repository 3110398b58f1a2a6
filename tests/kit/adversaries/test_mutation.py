"""The mutation-sweep library: one-edit operators, the argued equivalence table, the runner's order, and the adequacy gate."""

from __future__ import annotations

import pytest

from arena_kit.adversaries.mutation.adequacy import adequate, adversary_run, survivors, table, tally
from arena_kit.adversaries.mutation.equivalence import Equivalent, key_matches, listed, markdown
from arena_kit.adversaries.mutation.operators import Mutant, Operator, edits
from arena_kit.adversaries.mutation.sweep import KILL_AT, Outcome, graded, run


def _plus_one(node: int) -> list[int | None]:
    return [node + 1]


def _drop_zero(node: int) -> list[int | None]:
    return [None] if node == 0 else []


def test_edits_go_operator_by_operator_then_node_by_node() -> None:
    ops = (Operator("plus_one", "n -> n + 1", _plus_one), Operator("drop_zero", "drop a 0", _drop_zero))
    assert [(op.name, k, v) for op, k, v in edits([0, 5], ops)] == [
        ("plus_one", 0, 1),
        ("plus_one", 1, 6),
        ("drop_zero", 0, None),
    ]


def test_a_listed_key_matches_exactly_except_at_its_stars() -> None:
    assert key_matches("trim_side: TRIM(*) -> LTRIM(*)", "trim_side: TRIM(a) -> LTRIM(a)")
    assert not key_matches("trim_side: TRIM(a)", "trim_side: TRIM(a) -> LTRIM(a)")


def test_an_entry_holds_only_for_its_family_and_the_variants_it_names() -> None:
    table_ = (Equivalent("fam", ("op: *",), "why", when=lambda p: p == "lower", when_text="lower case"),)
    assert listed(table_, "fam", "op: x", "lower")
    assert not listed(table_, "fam", "op: x", "upper") and not listed(table_, "other", "op: x", "lower")
    assert markdown(table_).splitlines()[2] == "| 1 | fam | 1 | lower case | why |"


def _outcome(seed: int, key: str, score: float, stage: str = "checked") -> Outcome:
    return Outcome("fam", seed, key.split(":")[0], key, score, stage, "answer")


def test_graded_keeps_each_mutant_s_key_and_the_grader_s_score_and_stage() -> None:
    mutants = [Mutant("fam", "op", "op: a", "A"), Mutant("fam", "op", "op: b", "B")]
    out = graded(7, mutants, lambda answer: (1.0, "checked") if answer == "A" else (0.0, "error"))
    assert [(o.seed, o.key, o.score, o.ran, o.killed) for o in out] == [
        (7, "op: a", 1.0, True, False),
        (7, "op: b", 0.0, False, True),
    ]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_runner_yields_tasks_in_seed_order(jobs: int) -> None:
    assert [list(r) for r in run(range, [3, 1, 2], jobs)] == [[0, 1, 2], [0], [0, 1]]


def test_adequacy_counts_a_survivor_only_when_it_ran_scored_above_the_bar_and_is_not_argued() -> None:
    outcomes = [
        _outcome(1, "a: x", 1.0),
        _outcome(1, "b: x", KILL_AT),
        _outcome(2, "c: x", 1.0, "error"),
        _outcome(2, "eq: x", 1.0),
    ]
    tallies = tally(outcomes, lambda o: o.key.startswith("eq"))
    assert [o.key for o in survivors(tallies)] == ["a: x"]
    assert not adequate(tallies) and adequate(tallies, ceiling=1)
    assert "| fam | 4 | 1 | 3 | 1 | 1 | 1 | 50.0 % |" in table(tallies)
    assert survivors(tally([], lambda o: False)) == [] and adequate({})


def test_the_sweep_s_run_rewards_a_task_only_when_a_non_equivalent_mutant_survived_it() -> None:
    by_task = {"t1": [_outcome(1, "a: x", 1.0)], "t2": [_outcome(2, "eq: x", 1.0)], "t3": []}
    run_ = adversary_run(by_task, lambda o: o.key.startswith("eq"), "claim", 0.1)
    assert run_.rewards == {"t1": [1.0], "t2": [0.0], "t3": [0.0]} and run_.ceiling == 0.1
