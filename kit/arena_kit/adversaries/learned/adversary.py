"""The learned shortcut as an `Adversary`: fit on the train split, played on dev or test, decided by the gate's bound."""

from __future__ import annotations

from typing import Any, TypeVar

from arena_kit.adversaries.learned.observe import Ground, Learner, observe
from arena_kit.adversaries.learned.play import play
from arena_kit.adversaries.learned.train import fit
from arena_kit.contract.adversary import AdversaryRun, Split

__all__ = ["learned_adversary"]

T = TypeVar("T")
C = TypeVar("C")


def learned_adversary(
    learner: Learner[C, Any],
    ground: Ground[T, C],
    split: Split,
    tasks: int,
    *,
    train_tasks: int,
    ceiling: float,
    claim: str = "",
    seed: int = 0,
    abstain: bool = True,
) -> AdversaryRun:
    """`learner` fit on the first `train_tasks` train tasks (each released once seen), then played on
    the first `tasks` tasks of `split` and scored by the real grader. `abstain`: fit a "none"
    threshold out of fold (for tasks that may have nothing to find; needs scikit-learn)."""
    seen = observe([learner], ground.tasks("train", train_tasks), ground, prune=True)[learner.name]
    fitted = fit(learner.make, seen, seed, abstain=abstain)
    cases = observe([learner], ground.tasks(split, tasks), ground)[learner.name]
    claim = claim or f"{learner.name}, fit on {train_tasks} train tasks, scores at most {ceiling}"
    return play(fitted, cases, ground, claim, ceiling)
