# mypy: disallow-subclassing-any=False
"""The taskset half of the contract: the split and task count Arena's commands pass, and a refusal of tasks off the contract.

`arena probe` and `arena demo` set `[env.taskset] split` and cut the tasks with `[select] limit`, so a
taskset on the contract takes `split` and yields `num_tasks` tasks from its split's seeds (train
from 0, dev from 1,000,000, test from 2,000,000: disjoint, so a learner trained on train never sees
a dev or test task). A taskset class (`ArenaTaskset` mixed into a `vf.Taskset`) whose task type is not an
`ArenaTask` is refused when defined.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import verifiers.v1 as vf
from pydantic import Field

from arena_kit.contract.task import ArenaTask

__all__ = ["SPLIT_START", "ArenaTaskset", "ArenaTasksetConfig", "Split", "split_seeds"]

Split = Literal["train", "dev", "test"]
SPLIT_START: dict[str, int] = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
SPLIT_SIZE = 1_000_000


def split_seeds(split: Split, n: int) -> range:
    """The first `n` seeds of `split`.

    Raises:
        ValueError: `n` is outside 0..1,000,000.
    """
    if not 0 <= n <= SPLIT_SIZE:
        raise ValueError(f"a split holds 0 to {SPLIT_SIZE:,} tasks, not {n}")
    return range(SPLIT_START[split], SPLIT_START[split] + n)


class ArenaTasksetConfig(vf.TasksetConfig):
    split: Split = "dev"
    """The seeds to draw tasks from: `train` (for learners), `dev` (the gate), `test` (held out)."""
    num_tasks: int = Field(100, ge=1, le=SPLIT_SIZE)
    """Tasks to yield: the first seeds of the split (`[select] limit` cuts them further)."""

    def seeds(self) -> range:
        return split_seeds(self.split, self.num_tasks)


class ArenaTaskset:
    """The contract's mixin for a verifiers Taskset: `class DemoTaskset(ArenaTaskset, vf.Taskset[DemoTask, DemoConfig])`.

    A mixin, not a generic subclass: verifiers finds a taskset's task and config types only in a
    `vf.Taskset[...]` base written on the class itself (`origin=Taskset`), so the class keeps that base.

    Raises (at class definition):
        TypeError: its task type is a verifiers Task but not an `ArenaTask`.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, vf.Task) and not issubclass(arg, ArenaTask):
                    raise TypeError(
                        f"{cls.__qualname__} yields {arg.__qualname__}, which is not an ArenaTask: "
                        "a taskset on the contract yields only confined tasks"
                    )
