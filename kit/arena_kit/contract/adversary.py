"""The shape of an environment's offline adversaries: a strategy played against the real grader, decided by a one-sided bound.

A scripted policy goes through a harness and `arena probe`; an adversary runs offline, where an
attack too costly for a rollout fits: a learner trained on the train split over cheap signals, a
sweep of one-edit mutants of the reference answer. Each returns its rewards per task and the
ceiling it claims to stay under; `AdversaryRun.verdict` decides the claim like a gate rule (met,
failed, or undecided at this many tasks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from arena_kit.gate.stats import Verdict

__all__ = ["Adversary", "AdversaryRun", "Split"]

Split = Literal["train", "dev", "test"]


@dataclass(frozen=True)
class AdversaryRun:
    claim: str
    """What the run shows when its verdict is met, e.g. "a position prior learned on train scores ≤ 0.10"."""
    ceiling: float
    """The highest mean reward the claim allows."""
    rewards: Mapping[str, Sequence[float]] = field(default_factory=dict)
    """Task → the rewards the adversary earned on it (each in [0, 1])."""

    def verdict(self) -> Verdict:
        """The claim decided by the upper one-sided 95 % bound of the mean (`arena_kit.gate.stats`)."""
        from arena_kit.gate.stats import decide, estimate

        return decide(estimate(self.rewards), self.ceiling, "at_most")


class Adversary(Protocol):
    """`(split, tasks) -> AdversaryRun`: attack the first `tasks` tasks of `split` (it may train on
    `train` first); pure and seeded, so a run repeats exactly."""

    def __call__(self, split: Split, tasks: int) -> AdversaryRun: ...
