"""The equivalent mutants, argued once: each entry names mutants by family and key, says why none can change a graded result, and when.

A mutant that survives the sweep and is not in this table is a hole in the held-out rows (or in
the grader's checks). `tests/schema_migration/test_mutants.py` grades every entry's mutants and
the reference on a dataset built to tell them apart (`adversary`) and requires identical scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schema_migration.families import Params
from schema_migration.generate import spec
from schema_migration.mutants.sweep import Outcome

__all__ = ["EQUIVALENT", "Equivalent", "is_equivalent", "matches"]


@dataclass(frozen=True)
class Equivalent:
    family: str
    keys: tuple[str, ...]
    """Mutant keys (see `build.Mutant.key`) this argument covers."""
    argument: str
    when: Callable[[Params], bool] | None = None
    """The task variants the argument holds for (None: all); `when_text` says which in words."""
    when_text: str = ""


def _index_desc(family: str, *keys: str) -> Equivalent:
    return Equivalent(
        family,
        keys,
        "A one-column index in DESC order holds the same entries and SQLite walks it either way, so no query or"
        " constraint sees a difference; the rules name the indexed column, not its order.",
    )


EQUIVALENT: tuple[Equivalent, ...] = ()


def matches(entry: Equivalent, family: str, key: str, params: Params) -> bool:
    return entry.family == family and key in entry.keys and (entry.when is None or entry.when(params))


def is_equivalent(o: Outcome) -> bool:
    params = spec(o.seed).params
    return any(matches(e, o.family, o.key, params) for e in EQUIVALENT)
