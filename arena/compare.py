"""`arena compare RUN_A RUN_B`: the paired difference of two vf-eval runs on the tasks they share.

A failed episode counts as reward 0, as in the probe and demo tables (it is the outcome the run
had); the per-task means, the difference and its interval come from `arena.stats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.errors import PrerequisiteError
from arena.stats import PairedDifference, by_task, inverse_t, paired_difference
from arena.traces import TRACES_FILE, read_traces

__all__ = ["Comparison", "compare_runs", "detectable_difference", "render_comparison", "run_rewards"]

POWER = 0.8


def run_rewards(run_dir: Path) -> dict[str, list[float]]:
    """task → the rewards of its episodes in `run_dir` (a failed episode: 0).

    Raises:
        PrerequisiteError: `run_dir` holds no traces.jsonl.
        TraceError: the traces are corrupt before the last line.
    """
    log = read_traces(run_dir)
    if not log.exists:
        raise PrerequisiteError(f"{run_dir} has no {TRACES_FILE}: give the directory of one vf-eval run "
                                "(a probe directory holds one per policy, e.g. PROBE_DIR/<env>-<policy>-<harness>-<split>)")
    return by_task((e.task, 0.0 if e.failed or e.reward is None else e.reward) for e in log.episodes)


@dataclass(frozen=True)
class Comparison:
    run_a: Path
    run_b: Path
    result: PairedDifference

    def as_json(self) -> dict[str, Any]:
        i = self.result.interval

        def number(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "run_a": str(self.run_a), "run_b": str(self.run_b), "tasks": i.tasks,
            "mean_a": number(self.result.mean_a), "mean_b": number(self.result.mean_b),
            "difference": number(i.mean), "se": number(i.se), "low": number(i.low), "high": number(i.high),
            "level": 0.95, "method": i.method,
            "detectable_difference": number(detectable_difference(i.se, i.tasks)),
            "differing": [{"task": t, "a": a, "b": b} for t, a, b in self.result.differing],
            "only_a": self.result.only_a, "only_b": self.result.only_b,
        }


def compare_runs(run_a: Path, run_b: Path) -> Comparison:
    """B − A on the shared tasks.

    Raises:
        PrerequisiteError: a run has no traces, or the two share no task.
    """
    a, b = run_rewards(run_a), run_rewards(run_b)
    result = paired_difference(a, b)
    if result.interval.tasks == 0:
        raise PrerequisiteError(f"{run_a} and {run_b} share no task ({len(a)} and {len(b)} tasks): "
                                "compare runs of the same environment and split")
    return Comparison(run_a, run_b, result)


def detectable_difference(se: float, tasks: int, power: float = POWER) -> float:
    """The smallest true difference this many tasks would detect (5 % two-sided, `power`), given
    the spread of the per-task differences seen: (t_{.975} + t_{power}) × SE. Quadrupling the
    tasks halves it."""
    if tasks < 2 or math.isnan(se):
        return float("nan")
    return (inverse_t(tasks - 1, 0.975) + inverse_t(tasks - 1, power)) * se


def render_comparison(c: Comparison) -> str:
    r, i = c.result, c.result.interval
    lines = [f"A: {c.run_a}  mean {r.mean_a:.3f}", f"B: {c.run_b}  mean {r.mean_b:.3f}"]
    if math.isnan(i.se):
        lines.append(f"B − A = {i.mean:+.3f} on {i.tasks} shared task (an interval needs at least 2)")
    else:
        lines.append(f"B − A = {i.mean:+.3f}  95 % CI [{i.low:+.3f}, {i.high:+.3f}]  on {i.tasks} shared tasks ({i.method})")
        if i.se == 0:
            lines.append(f"every shared task differs by the same {i.mean:+.3f}: the data show no spread, so the interval has no width")
        detectable = detectable_difference(i.se, i.tasks)
        if detectable > 0:
            lines.append(f"with this spread, {i.tasks} tasks detect a difference of about {detectable:.3f} (80 % power); "
                         "4× the tasks halve it")
    if r.only_a or r.only_b:
        lines.append(f"not shared: {len(r.only_a)} task(s) only in A, {len(r.only_b)} only in B (left out)")
    lines.append(f"{len(r.differing)} task(s) whose outcome differs" + (":" if r.differing else ""))
    lines += [f"  {task:<40} A {ma:.3f}  B {mb:.3f}  ({mb - ma:+.3f})" for task, ma, mb in r.differing]
    return "\n".join(lines)
