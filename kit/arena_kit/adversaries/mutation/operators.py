"""One-edit mutation operators over the nodes of an environment's reference answer, and the mutant each edit makes.

An operator never edits answer text: it is given one node of the reference's parsed form (a SQL
syntax tree, a JSON value) and returns replacement nodes (None removes the node), so every mutant
differs from the reference by exactly one edit. The environment parses, applies and renders; it
also names each mutant by a key that does not depend on the task's seed, so an equivalence argued
once (`equivalence`) covers every task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Mutant", "Operator", "edits"]

N = TypeVar("N")


@dataclass(frozen=True)
class Operator(Generic[N]):
    name: str
    what: str
    """What it changes, in a few words (`TRIM <-> LTRIM / RTRIM`)."""
    variants: Callable[[N], list[N | None]]
    """A node's replacements (None: remove it); [] for a node the operator does not apply to."""


@dataclass(frozen=True)
class Mutant:
    family: str
    """The task family (a sweep tallies by it)."""
    operator: str
    key: str
    """operator: fragment before -> after, seed-independent; `#n` when the same text occurs again."""
    answer: str
    """The mutant as a submission."""


def edits(nodes: Sequence[N], operators: Sequence[Operator[N]]) -> Iterator[tuple[Operator[N], int, N | None]]:
    """Every single edit: (operator, the node's position in `nodes`, its replacement), operator by operator."""
    for op in operators:
        for k, node in enumerate(nodes):
            for variant in op.variants(node):
                yield op, k, variant
