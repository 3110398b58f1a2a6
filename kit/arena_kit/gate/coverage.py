"""The coverage check: simulate runs of a known mean, count how often the intervals `estimate` prints
cover it and how often the paired test calls two runs of one agent different.

Each run draws its tasks' success rates from Beta(μκ, (1 − μ)κ) (task effects: at μ = 0.02 most
tasks are near 0 and a few are not), then each rollout's reward from its task's rate: a 0/1 outcome,
or a continuous reward from Beta(pν, (1 − p)ν). The runs go through `stats.intervals`, the code
`estimate` runs, and pairs of runs of one agent (the same task rates, rollouts drawn apart) through
`paired.sign_flip_p_values`, the code `paired_test` runs.

`python -m arena_kit.gate.coverage [--runs N] [--seed S]` prints the table in docs/viewing.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from arena_kit.gate.bounds import LEVEL, cp_lower, cp_upper
from arena_kit.gate.paired import sign_flip_p_values
from arena_kit.gate.stats import intervals

__all__ = ["KINDS", "MEANS", "ROLLOUTS", "TASKS", "Cell", "markdown", "run_grid", "simulate"]

MEANS = (0.02, 0.1, 0.5, 0.9, 0.98)
TASKS = (5, 10, 20, 50, 200)
ROLLOUTS = (1, 3)
Kind = Literal["0/1", "continuous"]
KINDS: tuple[Kind, ...] = ("0/1", "continuous")
TASK_EFFECT = 4.0
"""κ: task rates ~ Beta(μκ, (1 − μ)κ), a standard deviation of √(μ(1 − μ)/5) between tasks."""
REWARD_SPREAD = 4.0
"""ν: a continuous reward ~ Beta(pν, (1 − p)ν) around its task's rate p."""


@dataclass(frozen=True)
class Cell:
    """One grid cell's counts over `runs` simulated runs (and as many pairs of runs)."""

    mean: float
    tasks: int
    rollouts: int
    kind: Kind
    runs: int
    covered: int
    """Runs whose two-sided interval holds the true mean."""
    lower_held: int
    upper_held: int
    """Runs whose one-sided lower (upper) bound is at most (at least) the true mean."""
    false_positives: int
    """Pairs of runs of one agent the paired test called different (p ≤ 1 − level)."""

    @property
    def coverage(self) -> float:
        return self.covered / self.runs

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.runs

    def coverage_at_least(self, confidence: float = 0.999) -> float:
        """A one-sided lower bound on the true coverage, allowing for Monte-Carlo error (exact)."""
        return float(cp_lower(self.covered, self.runs, 1 - confidence))

    def worst_one_sided_at_least(self, confidence: float = 0.999) -> float:
        return float(cp_lower(min(self.lower_held, self.upper_held), self.runs, 1 - confidence))

    def false_positive_rate_at_most(self, confidence: float = 0.999) -> float:
        """A one-sided upper bound on the true false-positive rate, allowing for Monte-Carlo error."""
        return float(cp_upper(self.false_positives, self.runs, 1 - confidence))


def simulate(
    rng: np.random.Generator,
    mean: float,
    tasks: int,
    rollouts: int,
    kind: Kind,
    runs: int,
    rates: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(task means of `runs` runs, runs × tasks; the task rates they were drawn from)."""
    if rates is None:
        rates = rng.beta(mean * TASK_EFFECT, (1 - mean) * TASK_EFFECT, size=(runs, tasks))
    p = np.repeat(rates[:, :, None], rollouts, axis=2)
    if kind == "0/1":
        rewards = (rng.random(p.shape) < p).astype(float)
    else:
        tiny = 1e-9
        rewards = rng.beta(np.maximum(p * REWARD_SPREAD, tiny), np.maximum((1 - p) * REWARD_SPREAD, tiny))
    return rewards.mean(axis=2), rates


def run_grid(
    runs: int = 400,
    seed: int = 0,
    level: float = LEVEL,
    means: Sequence[float] = MEANS,
    tasks: Sequence[int] = TASKS,
    rollouts: Sequence[int] = ROLLOUTS,
    kinds: Sequence[Kind] = KINDS,
) -> list[Cell]:
    """Every cell of the grid, each from its own seeded stream (a cell's result does not depend on
    which other cells run)."""
    cells = []
    for i, (mu, n, k, kind) in enumerate(
        (mu, n, k, kind) for mu in means for n in tasks for k in rollouts for kind in kinds
    ):
        rng = np.random.default_rng([seed, i])
        x, rates = simulate(rng, mu, n, k, kind, runs)
        low, high, lower, upper = intervals(x, binary=(k == 1 and kind == "0/1"), level=level)
        twin, _ = simulate(rng, mu, n, k, kind, runs, rates=rates)
        p = sign_flip_p_values((twin - x).T, seed=seed)
        cells.append(
            Cell(
                mean=mu,
                tasks=n,
                rollouts=k,
                kind=kind,
                runs=runs,
                covered=int(((low <= mu) & (mu <= high)).sum()),
                lower_held=int((lower <= mu).sum()),
                upper_held=int((mu <= upper).sum()),
                false_positives=int((p <= 1 - level).sum()),
            )
        )
    return cells


def markdown(cells: Sequence[Cell]) -> str:
    """The table docs/viewing.md shows: coverage of the two-sided 95 % interval (and the worse of
    the two one-sided bounds) and the paired test's false-positive rate, per cell."""
    runs = cells[0].runs if cells else 0
    lines = [
        f"Coverage of the 95 % interval (worse one-sided bound) / paired false-positive rate, {runs:,} runs per cell:",
        "",
        "| true mean | tasks | "
        + " | ".join(f"{kind}, {k} rollout{'s' if k > 1 else ''}" for k in ROLLOUTS for kind in KINDS)
        + " |",
        "| ---: | ---: |" + " :---: |" * (len(ROLLOUTS) * len(KINDS)),
    ]
    by = {(c.mean, c.tasks, c.rollouts, c.kind): c for c in cells}
    for mu in sorted({c.mean for c in cells}):
        for n in sorted({c.tasks for c in cells}):
            row = []
            for k in ROLLOUTS:
                for kind in KINDS:
                    c = by.get((mu, n, k, kind))
                    one_sided = None if c is None else min(c.lower_held, c.upper_held) / c.runs
                    row.append(
                        "—" if c is None else f"{c.coverage:.3f} ({one_sided:.3f}) / {c.false_positive_rate:.3f}"
                    )
            lines.append(f"| {mu} | {n} | " + " | ".join(row) + " |")
    worst = min(cells, key=lambda c: c.coverage)
    fp = max(cells, key=lambda c: c.false_positive_rate)
    lines += [
        "",
        f"Lowest coverage {worst.coverage:.3f} (true mean {worst.mean}, {worst.tasks} tasks, {worst.rollouts} rollout(s), {worst.kind}); "
        f"highest false-positive rate {fp.false_positive_rate:.3f} (true mean {fp.mean}, {fp.tasks} tasks, {fp.rollouts} rollout(s), {fp.kind}); "
        f"pooled false-positive rate {sum(c.false_positives for c in cells) / max(1, sum(c.runs for c in cells)):.4f}.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena_kit.gate.coverage", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--runs", type=int, default=4000, help="simulated runs per cell (default 4000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(markdown(run_grid(runs=args.runs, seed=args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
