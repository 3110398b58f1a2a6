"""Tallies sweep outcomes per family and operator: mutants, not run, killed, equivalent (argued), survivors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from schema_migration.mutants.sweep import Outcome

__all__ = ["Tally", "table", "tally"]


@dataclass
class Tally:
    mutants: int = 0
    not_run: int = 0
    """Stopped before the checks (SQL error, integrity failure): scored 0, so killed too."""
    killed: int = 0
    """Ran and scored <= 0.5."""
    equivalent: int = 0
    """Ran, scored above 0.5, and is in the equivalence table."""
    survivors: list[Outcome] = field(default_factory=list)
    """Ran, scored above 0.5, and is not in the equivalence table: a hole in the held-out rows."""

    @property
    def score(self) -> float:
        """Killed share of the runnable mutants that are not equivalent."""
        live = self.mutants - self.not_run - self.equivalent
        return 1.0 if live == 0 else self.killed / live

    def add(self, o: Outcome, equivalent: bool) -> None:
        self.mutants += 1
        if not o.ran:
            self.not_run += 1
        elif o.killed:
            self.killed += 1
        elif equivalent:
            self.equivalent += 1
        else:
            self.survivors.append(o)


def tally(outcomes: Iterable[Outcome], is_equivalent: Callable[[Outcome], bool]) -> dict[tuple[str, str], Tally]:
    """Tallies by (family, operator), plus (family, "all"), ("all", operator) and ("all", "all")."""
    out: dict[tuple[str, str], Tally] = {}
    for o in outcomes:
        eq = is_equivalent(o)
        for key in ((o.family, o.operator), (o.family, "all"), ("all", o.operator), ("all", "all")):
            out.setdefault(key, Tally()).add(o, eq)
    return out


def table(tallies: dict[tuple[str, str], Tally], rows: str = "family") -> str:
    """A markdown table, one row per family (or per operator), with the totals last."""
    index = 0 if rows == "family" else 1
    names = sorted({k[index] for k in tallies if k[index] != "all"}) + ["all"]
    lines = [
        f"| {rows} | mutants | not run | ran | killed | equivalent | survivors | score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        t = tallies[(name, "all") if index == 0 else ("all", name)]
        ran = t.mutants - t.not_run
        lines.append(
            f"| {name} | {t.mutants} | {t.not_run} | {ran} | {t.killed} | {t.equivalent} | {len(t.survivors)} | {100 * t.score:.1f} % |"
        )
    return "\n".join(lines)
