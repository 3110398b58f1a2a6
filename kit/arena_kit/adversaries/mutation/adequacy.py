"""The sweep's adequacy gate: tallies per family and operator, the exact rule (no non-equivalent survivor, or a declared count), and the `AdversaryRun`.

What it proves: the held-out data kill every one-edit wrong answer the operators make, except the
ones the equivalence table argues cannot differ. The exact rule reads the swept sample; the
`AdversaryRun` states the same claim for the task distribution: the share of tasks on which some
non-equivalent mutant survives stays under its ceiling, decided by the gate's upper bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from arena_kit.adversaries.mutation.sweep import Outcome
from arena_kit.contract.adversary import AdversaryRun

__all__ = ["Tally", "adequate", "adversary_run", "survivors", "table", "tally"]


@dataclass
class Tally:
    mutants: int = 0
    not_run: int = 0
    """Stopped before the checks (an error, an integrity failure): scored 0, so killed too."""
    killed: int = 0
    """Ran and scored <= KILL_AT."""
    equivalent: int = 0
    """Ran, scored above KILL_AT, and is in the equivalence table."""
    survivors: list[Outcome] = field(default_factory=list)
    """Ran, scored above KILL_AT, and is not in the equivalence table: a hole in the held-out data."""

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


def survivors(tallies: Mapping[tuple[str, str], Tally]) -> list[Outcome]:
    """Every non-equivalent survivor, in sweep order ([] for an empty sweep)."""
    total = tallies.get(("all", "all"))
    return list(total.survivors) if total else []


def adequate(tallies: Mapping[tuple[str, str], Tally], ceiling: int = 0) -> bool:
    """The exact rule: at most `ceiling` non-equivalent survivors (0 unless the environment declares more)."""
    return len(survivors(tallies)) <= ceiling


def adversary_run(
    by_task: Mapping[str, Sequence[Outcome]], is_equivalent: Callable[[Outcome], bool], claim: str, ceiling: float
) -> AdversaryRun:
    """Per task 1.0 when some non-equivalent mutant survived it, else 0.0; `verdict()` decides the
    share of such tasks against `ceiling` by the upper one-sided bound."""
    rewards = {task: [1.0 if survivors(tally(outcomes, is_equivalent)) else 0.0] for task, outcomes in by_task.items()}
    return AdversaryRun(claim=claim, ceiling=ceiling, rewards=rewards)
