"""The in-process gate: every published policy, and on request the learned adversaries, over the
first N tasks of each split, each row decided by its rule on one-sided 95 % bounds.

`python -m fault_localisation.gate --splits dev test --tasks 300 [--learners 2000] [--store-dir DIR]`
prints one row per policy and split: N, mean reward with its one-sided 95 % lower and upper
bounds (`arena_kit.gate.stats.estimate`), mean charged queries, how often it named the users'
root against chance (one over the faults reaching the reported edge, on incidents with a users'
fault), its rule and the verdict (`decide`: met, failed, or undecided when the bound straddles
the threshold). Exit status 0 when every rule is met, 1 when one failed, 3 when none failed but
one is undecided (as `arena probe`).

The rules (issue 39's acceptance):
- `oracle`: lower bound ≥ 0.98;
- investigations written from the prompt alone (`engineers.ENGINEERS`): lower bound ≥ 0.90;
- every shortcut (`shortcut_*`, the shipped learned models among them) and every learner: upper
  bound ≤ 0.35 and mean ≤ 0.20; the random-root guess, in addition, mean ≤ 0.10;
- `exhaustive` − `oracle`, paired by task: upper bound ≤ −0.15 (the budget binds);
- `cheater_*`: upper bound ≤ 0.10.
Other policies (`impatient`, `spammer`, the investigations that follow no request) are reported.

Episodes run through `episode.run_episode` (real setup, toolset and grader); the learners
(`--learners N`: `learned.adversaries.LEARNERS` fit on train[0:N]) are played offline against
the same stores through the toolset's query code and graded by the same grader.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from arena_kit.gate.stats import Estimate, Status, Verdict, decide, estimate, paired_test
from arena_kit.scripted import SHORTCUT_PREFIX
from fault_localisation.engineers import ENGINEERS
from fault_localisation.episode import Scored, run_all, split_tasks

from fault_localisation.policies import POLICIES
from fault_localisation.taskset import FaultLocalisationTask, incident_of

__all__ = ["Row", "main", "rules_for", "status_of", "table"]

SHORTCUT_CEILING = 0.35
SHORTCUT_MEAN = 0.20
RANDOM_ROOT_MEAN = 0.10
ORACLE_FLOOR = 0.98
ENGINEER_FLOOR = 0.90
CHEATER_CEILING = 0.10
BUDGET_MARGIN = 0.15

Check = Callable[[Estimate, Mapping[str, Mapping[str, list[float]]]], tuple[Status, str]]
"""A rule's check: (status, what it read) from a row's estimate and every row's rewards by task."""


def _bound(threshold: float, side: Literal["at_least", "at_most"]) -> Check:
    def check(est: Estimate, _rewards: Mapping[str, Mapping[str, list[float]]]) -> tuple[Status, str]:
        verdict: Verdict = decide(est, threshold, side)
        return verdict.status, verdict.text

    return check


def _mean_at_most(threshold: float) -> Check:
    def check(est: Estimate, _rewards: Mapping[str, Mapping[str, list[float]]]) -> tuple[Status, str]:
        status: Status = "met" if est.mean <= threshold else "failed"
        return status, f"{status}: mean {est.mean:.3f} vs ≤ {threshold:.2f}"

    return check


def _below_oracle(name: str, margin: float) -> Check:
    def check(_est: Estimate, rewards: Mapping[str, Mapping[str, list[float]]]) -> tuple[Status, str]:
        if "oracle" not in rewards:
            return "undecided", "the oracle was not run"
        paired = paired_test(rewards["oracle"], rewards[name])
        verdict = decide(paired, -margin, "at_most")
        return verdict.status, f"{verdict.text} ({name} − oracle {paired.difference:+.3f})"

    return check


def rules_for(name: str) -> list[tuple[str, Check]]:
    """The rules a row is held to: (what the rule says, its check); none for a reported row."""
    if name == "oracle":
        return [(f"lower ≥ {ORACLE_FLOOR}", _bound(ORACLE_FLOOR, "at_least"))]
    if name in ENGINEERS:
        return [(f"lower ≥ {ENGINEER_FLOOR}", _bound(ENGINEER_FLOOR, "at_least"))]
    if name == "exhaustive":
        return [(f"− oracle upper ≤ −{BUDGET_MARGIN}", _below_oracle(name, BUDGET_MARGIN))]
    if name.startswith("cheater_"):
        return [(f"upper ≤ {CHEATER_CEILING}", _bound(CHEATER_CEILING, "at_most"))]
    if name.startswith(SHORTCUT_PREFIX) or name.startswith("learner_"):
        rules = [
            (f"upper ≤ {SHORTCUT_CEILING}", _bound(SHORTCUT_CEILING, "at_most")),
            (f"mean ≤ {SHORTCUT_MEAN}", _mean_at_most(SHORTCUT_MEAN)),
        ]
        if name == "shortcut_random_root":
            rules.append((f"mean ≤ {RANDOM_ROOT_MEAN}", _mean_at_most(RANDOM_ROOT_MEAN)))
        return rules
    return []


@dataclass(frozen=True)
class Row:
    """One policy (or learner) over one split's tasks."""

    name: str
    split: str
    scored: Scored

    @property
    def estimate(self) -> Estimate:
        return estimate(self.scored.rewards)


def status_of(statuses: Sequence[Status]) -> Status:
    """failed if any rule failed, else undecided if any is, else met."""
    return "failed" if "failed" in statuses else "undecided" if "undecided" in statuses else "met"


class _Faults:
    """How many faults reach the reported edge, per task (one generator call each)."""

    def __init__(self) -> None:
        self._count: dict[str, int] = {}

    def __call__(self, task: FaultLocalisationTask) -> int:
        if task.data.id not in self._count:
            self._count[task.data.id] = len(incident_of(task.data).faults)
        return self._count[task.data.id]


def _row(
    name: str,
    split: str,
    tasks: list[FaultLocalisationTask],
    named: list[str],
    rewards: list[float],
    queries: list[int],
    faults: _Faults,
) -> Row:
    hits, chance, incidents = 0, 0.0, 0
    for task, service in zip(tasks, named):
        if task.data.label.service != "none":
            incidents += 1
            hits += service == task.data.label.service
            chance += 1 / faults(task)
    return Row(
        name,
        split,
        Scored(
            {t.data.id: [r] for t, r in zip(tasks, rewards)},
            sum(queries) / max(1, len(queries)),
            hits,
            chance,
            incidents,
        ),
    )


def policy_rows(split: str, tasks: list[FaultLocalisationTask], names: Sequence[str], faults: _Faults) -> Iterator[Row]:
    for name in names:
        episodes = run_all(POLICIES[name], tasks)
        named = [e.state.submission.service if e.state.submission else "" for e in episodes]
        yield _row(
            name, split, tasks, named, [e.reward for e in episodes], [e.state.queries_used for e in episodes], faults
        )


def learner_rows(splits: dict[str, list[FaultLocalisationTask]], train: int, store_dir: Path) -> Iterator[Row]:
    """Each adversary learner fit on train[0:train], played on every split (needs scikit-learn)."""
    from fault_localisation.learned.adversaries import LEARNERS, evaluate, fit, observe

    seen = observe(LEARNERS, split_tasks("train", train, store_dir), store_dir, prune=True)
    for learner in LEARNERS:
        model, keys, threshold = fit(learner, seen[learner.name], seed=0)
        for split, tasks in splits.items():
            yield Row(f"learner_{learner.name}", split, evaluate(learner, model, keys, threshold, tasks, store_dir))


HEADER = (
    "| policy | split | N | mean | lower | upper | queries | root named / chance | rule | verdict |",
    "|---|---|---|---|---|---|---|---|---|---|",
)


def render(row: Row, rewards: Mapping[str, Mapping[str, list[float]]]) -> tuple[str, Status | None]:
    """The row's table line and its status (None for a reported row)."""
    est = row.estimate
    rules = rules_for(row.name)
    every = {**rewards, row.name: row.scored.rewards}
    results = [(text, *check(est, every)) for text, check in rules]
    status = status_of([s for _, s, _ in results]) if results else None
    s = row.scored
    hit = f"{s.hits / s.incidents:.3f} / {s.chance / s.incidents:.3f}" if s.incidents else "—"
    rule = "; ".join(text for text, _, _ in results) or "reported"
    verdict: str = status or "—"
    if status in ("failed", "undecided"):
        verdict = "; ".join(why for _, s, why in results if s == status)
    return (
        f"| {row.name} | {row.split} | {est.tasks} | {est.mean:.3f} | {est.lower:.3f} | {est.upper:.3f} | "
        f"{s.queries:.1f} | {hit} | {rule} | {verdict} |"
    ), status


def table(
    splits: Sequence[str],
    count: int,
    store_dir: Path,
    names: Sequence[str],
    learners: int = 0,
    out: Callable[[str], None] = print,
) -> Status:
    """Print the gate table; the gate's overall status."""
    faults = _Faults()
    tasks = {split: split_tasks(split, count, store_dir) for split in splits}
    ordered = sorted(names, key=lambda n: n != "oracle")  # the paired rules read the oracle's row
    for line in HEADER:
        out(line)
    statuses: list[Status] = []

    def show(row: Row, rewards: Mapping[str, Mapping[str, list[float]]]) -> None:
        line, status = render(row, rewards)
        out(line)
        statuses.extend([status] if status else [])

    for split in splits:
        rewards: dict[str, dict[str, list[float]]] = {}
        for row in policy_rows(split, tasks[split], ordered, faults):
            rewards[row.name] = row.scored.rewards
            show(row, rewards)
    if learners:
        for row in learner_rows(tasks, learners, store_dir):
            show(row, {})
    return status_of(statuses)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fault_localisation.gate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--splits", nargs="+", default=["dev", "test"], choices=["train", "dev", "test"])
    parser.add_argument("--tasks", type=int, default=300, help="tasks per split (the first N)")
    parser.add_argument(
        "--policy",
        action="append",
        dest="policies",
        metavar="NAME",
        help="only these policies (repeatable; default: every published one)",
    )
    parser.add_argument(
        "--learners",
        type=int,
        default=0,
        metavar="TRAIN",
        help="also fit the adversary learners on train[0:TRAIN] and gate them (needs the [train] extra)",
    )
    parser.add_argument(
        "--store-dir", type=Path, default=None, help="cache the log stores here (default: a temporary dir)"
    )
    args = parser.parse_args(argv)
    names = args.policies or list(POLICIES)
    unknown = sorted(set(names) - set(POLICIES))
    if unknown:
        parser.error(f"unknown policies: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="fl-gate-") as tmp:
        status = table(
            args.splits,
            args.tasks,
            args.store_dir or Path(tmp),
            names,
            args.learners,
            out=lambda line: print(line, flush=True),
        )
    print(f"gate: {status}")
    return {"met": 0, "failed": 1, "undecided": 3}[status]


if __name__ == "__main__":
    sys.exit(main())
