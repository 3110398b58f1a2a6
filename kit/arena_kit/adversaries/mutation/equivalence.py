"""The equivalence table: mutants an environment argues cannot change a graded result, each argument once, by family and key.

A mutant that survives the sweep and is in no entry is a hole in the held-out data (or in the
grader's checks). An entry is an argument, not a measurement: the environment should also test each
entry's mutants against the reference on data built to tell them apart, and require equal scores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Equivalent", "key_matches", "listed", "markdown", "matches"]

P = TypeVar("P")


@dataclass(frozen=True)
class Equivalent(Generic[P]):
    family: str
    keys: tuple[str, ...]
    """Mutant keys (`Mutant.key`) this argument covers; each "*" stands for any text."""
    argument: str
    when: Callable[[P], bool] | None = None
    """The task variants (by the task's parameters) the argument holds for (None: all); `when_text` says which in words."""
    when_text: str = ""


def key_matches(pattern: str, key: str) -> bool:
    """A listed key matches exactly, except that each "*" in it stands for any text (the THEN value a
    task variant draws, the columns a view happens to have)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), key, re.S) is not None


def matches(entry: Equivalent[P], family: str, key: str, params: P) -> bool:
    return (
        entry.family == family
        and any(key_matches(k, key) for k in entry.keys)
        and (entry.when is None or entry.when(params))
    )


def listed(table: Sequence[Equivalent[P]], family: str, key: str, params: P) -> bool:
    """Whether some entry of `table` argues the mutant `key` of a `family` task with `params` equivalent."""
    return any(matches(e, family, key, params) for e in table)


def markdown(table: Sequence[Equivalent[P]]) -> str:
    """The table as markdown: one row per argument (family, how many keys, when, the argument)."""
    lines = ["| # | family | keys | when | argument |", "|---:|---|---:|---|---|"]
    for k, e in enumerate(table, 1):
        lines.append(f"| {k} | {e.family} | {len(e.keys)} | {e.when_text or 'always'} | {e.argument} |")
    return "\n".join(lines)
