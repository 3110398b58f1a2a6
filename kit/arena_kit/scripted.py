"""Policy building blocks an environment publishes through its entry point: a fixed script, and the
shortcut marker the degenerate-policy gate reads (`shortcut_*` names, an optional ceiling)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena_kit.policy import Action, Answer, Observation, Policy

__all__ = [
    "INVESTIGATION_PREFIX",
    "SHORTCUT_CEILING",
    "SHORTCUT_PREFIX",
    "ScriptedPolicy",
    "Shortcut",
    "shortcut_ceiling",
]


@dataclass(frozen=True)
class ScriptedPolicy:
    """Plays `actions` in order: turn i (i tool calls already made) gets `actions[i]`.

    Past the end of the script it answers `done_text`, so a script without a final `Answer`
    still ends the rollout.
    """

    actions: Sequence[Action]
    done_text: str = "The script has no further actions."

    def __call__(self, obs: Observation) -> Action:
        index = len(obs.steps)
        return self.actions[index] if index < len(self.actions) else Answer(self.done_text)


SHORTCUT_PREFIX = "shortcut_"
"""Policies published under this prefix are shortcuts: honest, observation-only strategies that skip
the investigation (a keyword grep, a schema-only fix). The gate holds them far below the oracle."""
INVESTIGATION_PREFIX = "investigate_"
"""Policies published under this prefix are honest investigations lighter than the oracle's (one
that skips a step, or follows names instead of a request). The gate reports them, so a reader sees
what each difficulty separates, and holds them to nothing but honesty (no rule fires on them)."""
SHORTCUT_CEILING = 0.35
"""The highest mean a shortcut may reach unless it declares its own ceiling (`Shortcut`)."""


@dataclass(frozen=True)
class Shortcut:
    """A shortcut policy with the gate's ceiling for it, when its environment sets another one
    than `SHORTCUT_CEILING` (when its grader lets a wrong answer keep more partial credit by design)."""

    policy: Policy
    ceiling: float = SHORTCUT_CEILING

    def __call__(self, obs: Observation) -> Action:
        return self.policy(obs)


def shortcut_ceiling(policy: Policy) -> float:
    """The gate's ceiling for a shortcut policy."""
    return policy.ceiling if isinstance(policy, Shortcut) else SHORTCUT_CEILING
