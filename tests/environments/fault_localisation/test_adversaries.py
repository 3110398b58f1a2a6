"""The declared adversaries (`fault_localisation.adversaries`): the gate's learners, fit on train and played on a
split, as the contract's `AdversaryRun` under the gate's shortcut ceiling. The claim itself at the declared
training size is decided on dev by tests/environments/test_every_environment.py."""

import sys

import pytest

import fault_localisation
from arena_kit.contract import load_ref
from arena_kit.contract.taskset import split_seeds
from fault_localisation import adversaries
from fault_localisation.episode import split_tasks
from fault_localisation.gate import SHORTCUT_CEILING, learner_rows

TRAIN = 12
TASKS = 4


def test_every_learner_of_the_gate_is_declared():
    from fault_localisation.learned.adversaries import LEARNERS

    declared = fault_localisation.ENVIRONMENT.adversaries
    assert sorted(declared) == sorted(f"learner_{learner.name}" for learner in LEARNERS)
    assert all(callable(load_ref(ref)) for ref in declared.values())


@pytest.mark.slow
def test_each_adversary_plays_the_splits_tasks_as_the_gates_learner_row_does(monkeypatch, tmp_path):
    pytest.importorskip("sklearn")
    monkeypatch.setattr(adversaries, "TRAIN_TASKS", TRAIN)
    splits = {split: split_tasks(split, TASKS, tmp_path) for split in ("dev", "test")}
    gate = {(row.name, row.split): row.scored.rewards for row in learner_rows(splits, TRAIN, tmp_path)}
    for name, ref in fault_localisation.ENVIRONMENT.adversaries.items():
        for split in ("dev", "test"):
            run = load_ref(ref)(split, TASKS)
            assert run.ceiling == SHORTCUT_CEILING and f"{TRAIN} train incidents" in run.claim
            assert list(run.rewards) == [f"{split}-{seed}" for seed in split_seeds(split, TASKS)]
            assert run.rewards == gate[name, split]


def test_without_scikit_learn_the_learners_name_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setattr(adversaries, "TRAIN_TASKS", 1)
    adversaries._fitted.cache_clear()
    with pytest.raises(ImportError, match=r"fault-localisation\[train\]"):
        adversaries.forest_windows("dev", 1)
