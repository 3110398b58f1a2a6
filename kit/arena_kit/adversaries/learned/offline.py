"""An environment's tools answered offline: the executor a plan's calls go to, and `drive`, which plays a plan against it."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

from arena_kit.policy import CallTool

__all__ = ["Executor", "Plan", "drive"]

T = TypeVar("T")
Plan = Generator[CallTool, dict[str, Any], T]
"""A query plan: yields tool calls, is sent each call's parsed JSON result, returns what it saw."""


class Executor(Protocol):
    """One task's tools as the agent sees them, minus the budget: each call's parsed JSON result (`{}`
    for a call the tool would refuse), counting the calls the budget would charge."""

    charged: int

    def __call__(self, call: CallTool) -> dict[str, Any]: ...


def drive(run: Plan[T], answer: Callable[[CallTool], dict[str, Any]]) -> T:
    """Play a plan against `answer` to its end; its return value."""
    try:
        call = next(run)
        while True:
            call = run.send(answer(call))
    except StopIteration as done:
        value: T = done.value
        return value
