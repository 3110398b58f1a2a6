"""`arena compare BASELINE RUN…`: each run against one baseline, paired by the tasks they share.

Each run's one mean comes from `arena.scored` (the same as the demo and probe tables: failed
episodes are not in it but counted beside it). Each comparison is the exact paired test of
`arena_kit.gate.stats.paired_test`: p, the interval that agrees with it, wins/losses/ties; with
several runs, Holm's adjustment of their p-values. The planning figure (the smallest difference
the shared tasks could show) is computed from an assumed spread of per-task differences and
labelled as such.

`--fail-if-worse DELTA` (a CI gate) decides, for every run, "B − A ≥ −DELTA" by the one-sided
bounds of B − A at 95 % (Bonferroni over the runs: each at 1 − 0.05/m): shown worse (upper bound
< −DELTA: exit 1), shown not worse by more than DELTA (lower bound ≥ −DELTA: exit 0 if every run
is), or undecided (exit 3: too few tasks to tell; the report says about how many would).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import PrerequisiteError, UsageError
from arena.scored import MEAN_LEGEND, RunScores, score_episodes
from arena.traces import TRACES_FILE, read_traces
from arena_kit.gate.stats import LEVEL, PairedTest, Verdict, decide, detectable_difference, holm, paired_test

__all__ = ["ASSUMED_SPREAD", "Comparison", "CompareReport", "compare_runs", "render_comparison", "run_scores"]

ASSUMED_SPREAD = 0.5
"""The planning figure's default standard deviation of per-task differences: 0/1 outcomes that
differ on about a quarter of the tasks."""


def run_scores(run_dir: Path) -> RunScores:
    """The scored rewards of the run in `run_dir`, by task (`arena.scored`).

    Raises:
        PrerequisiteError: `run_dir` holds no traces.jsonl, or a reward outside [0, 1].
        TraceError: the traces are corrupt before the last line.
    """
    log = read_traces(run_dir)
    if not log.exists:
        raise PrerequisiteError(
            f"{run_dir} has no {TRACES_FILE}: give the directory of one vf-eval run "
            "(a probe directory holds one per policy, e.g. PROBE_DIR/<env>-<policy>-<harness>-<split>)"
        )
    try:
        return score_episodes(log.episodes)
    except ValueError as exc:
        raise PrerequisiteError(f"{run_dir}: {exc}; Arena's intervals are for rewards in [0, 1]") from None


@dataclass(frozen=True)
class Comparison:
    run: Path
    scores: RunScores
    result: PairedTest
    """B − A, B this run, A the baseline."""
    p_holm: float
    """`result.p_value` adjusted by Holm's method over every run compared (= p for one run)."""
    detectable: float | None
    """Planning: the smallest difference the shared tasks could show at the assumed spread."""
    gate: Verdict | None
    """`--fail-if-worse`: "B − A ≥ −DELTA" by the family's one-sided bounds (None: not asked)."""


@dataclass(frozen=True)
class CompareReport:
    baseline: Path
    baseline_scores: RunScores
    comparisons: list[Comparison]
    spread: float
    """The assumed standard deviation of per-task differences (planning only)."""
    fail_if_worse: float | None
    warnings: list[str]

    def exit_code(self) -> int:
        """0; with `--fail-if-worse`: 1 when a run is shown worse by more than DELTA, else 3 when
        one cannot be told apart (too few tasks), else 0."""
        verdicts = [c.gate.status for c in self.comparisons if c.gate is not None]
        return 1 if "failed" in verdicts else 3 if "undecided" in verdicts else 0

    def as_json(self) -> dict[str, Any]:
        return {
            "baseline": {"run": str(self.baseline), **self.baseline_scores.as_json()},
            "runs": [
                {
                    "run": str(c.run),
                    **c.scores.as_json(),
                    "paired": {**c.result.as_json(), "p_holm": c.p_holm},
                    "planning": {
                        "assumed_spread": self.spread,
                        "detectable_difference": c.detectable,
                        "label": "planning figure from an assumed spread, not a measurement",
                    },
                    "fail_if_worse": None
                    if c.gate is None
                    else {
                        "delta": self.fail_if_worse,
                        "status": c.gate.status,
                        "bound": c.gate.bound,
                        "tasks_needed": c.gate.tasks_needed,
                        "text": c.gate.text,
                    },
                }
                for c in self.comparisons
            ],
            "warnings": self.warnings,
            "exit_code": self.exit_code(),
        }


def compare_runs(
    baseline: Path, runs: Sequence[Path], *, fail_if_worse: float | None = None, spread: float = ASSUMED_SPREAD
) -> CompareReport:
    """Every run against the baseline on their shared tasks.

    Raises:
        PrerequisiteError: a run has no traces, or shares no task with the baseline.
        UsageError: DELTA < 0, or the spread is not in (0, 1].
    """
    if fail_if_worse is not None and fail_if_worse < 0:
        raise UsageError(f"--fail-if-worse takes how much worse is tolerated, ≥ 0 (got {fail_if_worse})")
    if not 0 < spread <= 1:
        raise UsageError(f"--spread is a standard deviation of per-task differences, in (0, 1] (got {spread})")
    base = run_scores(baseline)
    scored = [(run, run_scores(run)) for run in runs]
    results = [paired_test(base.rewards, s.rewards) for _, s in scored]
    for (run, s), result in zip(scored, results):
        if result.tasks == 0:
            raise PrerequisiteError(
                f"{baseline} and {run} share no scored task ({base.estimate.tasks} and {s.estimate.tasks} tasks): "
                "compare runs of the same environment and split"
            )
    adjusted = holm([r.p_value for r in results])
    family_level = 1 - (1 - LEVEL) / len(results)
    comparisons = []
    for (run, s), result, p in zip(scored, results, adjusted):
        gate = None
        if fail_if_worse is not None:
            bounds = result if len(results) == 1 else paired_test(base.rewards, s.rewards, level=family_level)
            gate = decide(bounds, -fail_if_worse, "at_least")
        comparisons.append(Comparison(run, s, result, p, detectable_difference(result.tasks, spread), gate))
    return CompareReport(baseline, base, comparisons, spread, fail_if_worse, _warnings(baseline, base, scored))


def _warnings(baseline: Path, base: RunScores, scored: Sequence[tuple[Path, RunScores]]) -> list[str]:
    warnings = []
    for run, s in [(baseline, base), *scored]:
        if s.failed:
            warnings.append(
                f"{run}: {s.failed} of {s.episodes} episodes failed ({s.infra} on an infrastructure fault); "
                "they are not in its mean or the comparison"
            )
    digest = _traces_digest(baseline)
    for run, _ in scored:
        if run.resolve() == baseline.resolve():
            warnings.append(f"{run} is the baseline itself: a run compared with itself differs by 0 by construction")
        elif _traces_digest(run) == digest:
            warnings.append(f"{run} has the same traces as the baseline (a copy): they differ by 0 by construction")
    return warnings


def _traces_digest(run_dir: Path) -> str:
    return hashlib.sha256((run_dir / TRACES_FILE).read_bytes()).hexdigest()


def render_comparison(report: CompareReport) -> str:
    lines = [f"A (baseline): {report.baseline}  {_run_line(report.baseline_scores)}"]
    several = len(report.comparisons) > 1
    for c in report.comparisons:
        r = c.result
        lines += [
            "",
            f"B: {c.run}  {_run_line(c.scores)}",
            f"  on the {r.tasks} shared task(s) A {r.mean_a:.3f}, B {r.mean_b:.3f}: {r.text()}",
            f"  one-sided {r.level:.0%} bounds: B − A ≥ {r.lower:+.3f}, B − A ≤ {r.upper:+.3f}  ({r.method})",
        ]
        if several:
            lines.append(
                f"  Holm-adjusted p over the {len(report.comparisons)} runs: {c.p_holm:.3g} "
                f"({'significant' if c.p_holm <= 1 - r.level else 'not significant'})"
            )
        if c.gate is not None:
            lines.append(
                f"  --fail-if-worse {report.fail_if_worse}: B − A ≥ {-(report.fail_if_worse or 0.0):+.3f}? {c.gate.text}"
                + (
                    f" (bounds at {1 - (1 - r.level) / len(report.comparisons):.2%} for {len(report.comparisons)} runs)"
                    if several
                    else ""
                )
            )
        more = detectable_difference(4 * r.tasks, report.spread)
        at_4x = "" if more is None else f"; {4 * r.tasks} tasks about {more:.3f}"
        shows = (
            "are too few to show any difference"
            if c.detectable is None
            else f"can show a difference of about {c.detectable:.3f}"
        ) + at_4x
        observed = f" (observed {r.spread:.2f})" if r.tasks > 1 else ""
        lines.append(
            f"  planning (an assumption, not a measurement): if per-task differences spread with sd {report.spread:.2f}"
            f"{observed}, {r.tasks} shared task(s) {shows}"
        )
        if r.only_a or r.only_b:
            lines.append(f"  not shared: {len(r.only_a)} task(s) only in A, {len(r.only_b)} only in B (left out)")
        lines.append(f"  {len(r.differing)} task(s) whose outcome differs" + (":" if r.differing else ""))
        lines += [f"    {task:<40} A {ma:.3f}  B {mb:.3f}  ({mb - ma:+.3f})" for task, ma, mb in r.differing]
    lines += ["", MEAN_LEGEND]
    return "\n".join(lines)


def _run_line(s: RunScores) -> str:
    beside = s.beside()
    return f"one mean {s.estimate.text()} over {s.estimate.tasks} task(s)" + (f"  ({beside})" if beside else "")
