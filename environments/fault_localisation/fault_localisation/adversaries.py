"""fault-localisation's declared offline adversaries: each learner of `learned.adversaries`, fit on train, played on a split.

`forest_windows` and `logistic_names` (`learned.adversaries.LEARNERS`: feature sets unlike the shipped
learned shortcut's, which the gate plays as the `shortcut_learned*` policies) are fit on the first
`TRAIN_TASKS` train incidents, then play the first `tasks` tasks of the split offline through the
toolset's query code and are graded by the real grader, as `python -m fault_localisation.gate
--learners` plays them. Both learners are fit in one pass over train, once a process. Each claims
the gate's shortcut ceiling: its upper one-sided 95 % bound at most `gate.SHORTCUT_CEILING`.
Needs scikit-learn (the package's `train` extra).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from arena_kit.contract import AdversaryRun, Split
from fault_localisation.episode import split_tasks
from fault_localisation.gate import SHORTCUT_CEILING

__all__ = ["TRAIN_TASKS", "forest_windows", "logistic_names"]

TRAIN_TASKS = 200
"""Train incidents each learner is fit on (the README's gate table fits them on 2,000)."""
INSTALL = "pip install 'fault-localisation[train]'"


@functools.cache
def _fitted(train: int) -> dict[str, tuple[Any, list[str], float]]:
    """Each learner's model, feature order and "none" threshold, fit on train[0:train] (one observation pass)."""
    try:
        import sklearn  # noqa: F401
    except ImportError as error:
        raise ImportError(f"fault-localisation's learners need scikit-learn: {INSTALL}") from error
    from fault_localisation.learned.adversaries import LEARNERS, fit, observe

    with tempfile.TemporaryDirectory(prefix="fl-adversary-train-") as tmp:
        seen = observe(LEARNERS, split_tasks("train", train, Path(tmp)), Path(tmp), prune=True)
    return {learner.name: fit(learner, seen[learner.name], seed=0) for learner in LEARNERS}


def _play(name: str, split: Split, tasks: int) -> AdversaryRun:
    from fault_localisation.learned.adversaries import LEARNERS, evaluate

    learner = next(learner for learner in LEARNERS if learner.name == name)
    model, keys, threshold = _fitted(TRAIN_TASKS)[name]
    with tempfile.TemporaryDirectory(prefix="fl-adversary-play-") as tmp:
        scored = evaluate(learner, model, keys, threshold, split_tasks(split, tasks, Path(tmp)), Path(tmp))
    return AdversaryRun(
        claim=f"the {name} learner fit on {TRAIN_TASKS} train incidents scores at most {SHORTCUT_CEILING}",
        ceiling=SHORTCUT_CEILING,
        rewards=scored.rewards,
    )


def forest_windows(split: Split, tasks: int) -> AdversaryRun:
    """A random forest over each service's WARN+ counts in five fixed windows, their rises and lags,
    the call graph and the reported endpoint's onset (`learned.adversaries.window_features`)."""
    return _play("forest_windows", split, tasks)


def logistic_names(split: Split, tasks: int) -> AdversaryRun:
    """A logistic regression over who names whom in four WARN+ samples and each service's fault-kind
    wording (`learned.adversaries.names_features`)."""
    return _play("logistic_names", split, tasks)
