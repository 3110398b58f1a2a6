"""Two more learners with feature sets unlike the shipped model's, trained on train seeds and
played on dev and test by the in-process gate (`python -m fault_localisation.gate --learners 2000`):

- `forest_windows`: a random forest over each service's WARN+ counts in five fixed windows (the
  quiet quarter hour, then minutes 15-25, 25-33, 33-41 and 41-60, where the faults start), its
  rise per window against its own baseline, the window it first rose in and that window's lag
  behind its callers' and ahead of its dependencies' first rises, the bare call graph, and the
  reported endpoint's onset (its failures per minute: one more count) against each service's
  first rise (no line text); 6 queries and the read;
- `logistic_names`: a logistic regression over who names whom in four 200-line WARN+ samples
  (20, 30, 40 and 50 minutes in) and the fault-kind wording of each service's own and naming
  lines (no counts, no call graph).

Both end like the shipped model: the top service, or "none" under a threshold fit out of fold on
train, then one read of it for its kind; they open no request, so they cite none, and what counts
is how often they name the users' root against chance. Episodes are played offline against the
real stores through the toolset's query code and scored by the real grader (`grade.grade`): the
kit's learned-shortcut library (`arena_kit.adversaries.learned`) over this environment's hooks
(`ground`). `forest_windows` and `logistic_names` are the two as the contract's adversaries."""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Generator, Sequence
from datetime import timedelta
from pathlib import Path
from statistics import mean
from typing import Any

from arena_kit.adversaries.learned import observe as kit
from arena_kit.adversaries.learned import offline
from arena_kit.adversaries.learned.adversary import learned_adversary
from arena_kit.adversaries.learned.estimators import logistic, random_forest
from arena_kit.adversaries.learned.observe import Case, Ground
from arena_kit.adversaries.learned.play import choose
from arena_kit.adversaries.learned.train import Fitted
from arena_kit.adversaries.learned.train import fit as kit_fit
from arena_kit.contract.adversary import AdversaryRun, Split
from arena_kit.policy import CallTool
from arena_kit.scripted import SHORTCUT_CEILING
from fault_localisation.episode import Scored, split_tasks
from fault_localisation.grade import Claim, grade
from fault_localisation.investigations import rose
from fault_localisation.learned.dataset import context_of, executor_for
from fault_localisation.learned.executor import Executor
from fault_localisation.learned.plan import series_onset
from fault_localisation.learned.policy import DESCRIBE_LIMIT
from fault_localisation.observe import KIND_EVIDENCE, Context, classify, line_fields, rate_z
from fault_localisation.taskset import FaultLocalisationTask, incident_of

__all__ = [
    "LEARNERS",
    "TRAIN_TASKS",
    "Learner",
    "evaluate",
    "fit",
    "forest_windows",
    "ground",
    "logistic_names",
    "names_features",
    "observe",
    "score_claims",
    "window_features",
]

Seen = dict[str, Any]
Rows = dict[str, dict[str, float]]
WINDOW_EDGES = (0, 15, 25, 33, 41, 60)
"""Minutes into the window where each count window starts (the last value is the window's end)."""
SAMPLE_STARTS = (20, 30, 40, 50)
_HIGH = ("ERROR", "FATAL")


def _log(x: float) -> float:
    return math.copysign(math.log1p(abs(x)), x)


def window_plan(ctx: Context) -> Generator[CallTool, dict[str, Any], Seen]:
    services = (yield CallTool("list_services", {})).get("services", [])
    reported = ctx.reported
    if reported is None:
        raise ValueError("the prompt names no reported endpoint")
    series = (yield ctx.count("minute", service=reported.edge, min_level="ERROR", text=reported.text)).get("counts", {})
    windows = []
    for a, b in zip(WINDOW_EDGES, WINDOW_EDGES[1:]):
        got = yield ctx.count(
            "service", start=ctx.start + timedelta(minutes=a), end=ctx.start + timedelta(minutes=b), min_level="WARN"
        )
        windows.append({str(k): int(v) for k, v in got.get("counts", {}).items()})
    onset = series_onset(ctx, {str(k): int(v) for k, v in series.items()}) if rose(ctx, series) else None
    return {
        "services": services,
        "windows": windows,
        "onset": None if onset is None else (onset - ctx.start) / timedelta(minutes=1),
    }


def window_features(ctx: Context, seen: Seen) -> Rows:
    names = sorted(str(s["name"]) for s in seen["services"])
    calls = {str(s["name"]): set(s.get("calls", [])) for s in seen["services"]}
    roles = {str(s["name"]): str(s.get("role")) for s in seen["services"]}
    callers: dict[str, set[str]] = defaultdict(set)
    for n, deps in calls.items():
        for d in deps:
            callers[d].add(n)
    lengths = [b - a for a, b in zip(WINDOW_EDGES, WINDOW_EDGES[1:])]
    base_len = lengths[0]
    windows = seen["windows"]
    onset = WINDOW_EDGES[-1] if seen["onset"] is None else float(seen["onset"])
    at_onset = next((i for i, b in enumerate(WINDOW_EDGES[2:]) if onset < b), len(lengths) - 2)
    z = {
        n: [rate_z(windows[0].get(n, 0), w.get(n, 0), length / base_len) for w, length in zip(windows[1:], lengths[1:])]
        for n in names
    }
    first = {n: next((i for i, v in enumerate(z[n]) if v > 3.5), len(lengths)) for n in names}
    rows: Rows = {}
    for n in names:
        f: dict[str, float] = {"base": _log(windows[0].get(n, 0)), "onset": onset}
        for i, (w, length) in enumerate(zip(windows[1:], lengths[1:])):
            f[f"w{i}"] = _log(w.get(n, 0))
            f[f"z{i}"] = z[n][i]
            f[f"ratio{i}"] = _log((w.get(n, 0) / length) / (windows[0].get(n, 0) / base_len + 0.1))
        f["first_rise"] = float(first[n])
        f["rise_vs_onset"] = float(first[n] - at_onset)
        f["minutes_before_onset"] = onset - WINDOW_EDGES[1 + min(first[n], len(lengths) - 1)]
        f["z_at_onset"] = z[n][at_onset]
        cf = [first[c] for c in callers[n]]
        df = [first[d] for d in calls[n]]
        f["lag_vs_callers"] = first[n] - min(cf, default=len(lengths))
        f["lag_vs_callers_mean"] = first[n] - (mean(cf) if cf else len(lengths))
        f["lead_vs_deps"] = min(df, default=len(lengths)) - first[n]
        f["callers_risen_end"] = float(sum(1 for c in callers[n] if z[c][-1] > 3.5))
        f["deps_risen_end"] = float(sum(1 for d in calls[n] if z[d][-1] > 3.5))
        f["callers"] = float(len(callers[n]))
        f["deps"] = float(len(calls[n]))
        f["edge"] = float(roles[n] == "edge")
        rows[n] = f
    return rows


def names_plan(ctx: Context) -> Generator[CallTool, dict[str, Any], Seen]:
    services = (yield CallTool("list_services", {})).get("services", [])
    lines: list[str] = []
    for minute in SAMPLE_STARTS:
        got = yield ctx.search(start=ctx.start + timedelta(minutes=minute), limit=200, min_level="WARN")
        lines += [str(line) for line in got.get("lines", [])]
    return {"names": sorted(str(s["name"]) for s in services), "lines": lines}


def names_features(ctx: Context, seen: Seen) -> Rows:
    names: list[str] = seen["names"]
    pattern = (
        re.compile(
            "(?<![A-Za-z0-9_-])("
            + "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
            + ")(?![A-Za-z0-9_-])"
        )
        if names
        else None
    )
    named: dict[str, Counter[str]] = {n: Counter() for n in names}
    namers: dict[str, set[str]] = {n: set() for n in names}
    names_who: dict[str, set[str]] = {n: set() for n in names}
    own: Counter[str] = Counter()
    own_kind: Counter[str] = Counter()
    naming_kind: Counter[str] = Counter()
    for line in seen["lines"]:
        fields = line_fields(line)
        if fields is None or fields[2] not in named:
            continue
        _, level, writer, _, message = fields
        kind = any(p.search(message) for _, p in KIND_EVIDENCE)
        own[writer] += 1
        own_kind[writer] += int(kind)
        for m in {m for m in (pattern.findall(message) if pattern else []) if m != writer}:
            named[m]["error" if level in _HIGH else "warn"] += 1
            namers[m].add(writer)
            names_who[writer].add(m)
            naming_kind[m] += int(kind)
    total = sum(sum(c.values()) for c in named.values()) or 1
    rows: Rows = {}
    for n in names:
        count = sum(named[n].values())
        rows[n] = {
            "named_warn": _log(named[n]["warn"]),
            "named_error": _log(named[n]["error"]),
            "named_share": count / total,
            "namers": float(len(namers[n])),
            "namers_named": float(sum(1 for w in namers[n] if namers[w])),
            "names_nobody": float(not names_who[n]),
            "names": float(len(names_who[n])),
            "own": _log(own[n]),
            "own_kind": _log(own_kind[n]),
            "own_kind_frac": own_kind[n] / (own[n] + 1),
            "naming_kind": _log(naming_kind[n]),
            "named_by_named_only": float(bool(namers[n]) and all(namers[w] for w in namers[n])),
        }
    return rows


Learner = kit.Learner[Context, Seen]
"""A plan, its features and a scikit-learn estimator (`arena_kit.adversaries.learned.observe.Learner`)."""
LEARNERS = (
    Learner("forest_windows", window_plan, window_features, random_forest),
    Learner("logistic_names", names_plan, names_features, logistic),
)
TRAIN_TASKS = 2000
"""Train incidents each contract adversary fits on (as `python -m fault_localisation.gate --learners 2000`)."""
_Case = Case[FaultLocalisationTask, Context]


def _release(task: FaultLocalisationTask, answer: offline.Executor) -> None:
    if isinstance(answer, Executor):
        answer.store.path.unlink(missing_ok=True)


def ground(store_dir: Path | None) -> Ground[FaultLocalisationTask, Context]:
    """This environment's hooks for the kit: tasks with their log stores in `store_dir`, the toolset's
    query code offline, the users' root as the label, and the real grader's reward."""

    def executor(task: FaultLocalisationTask) -> Executor:
        return executor_for(task, store_dir)

    def reward(case: _Case, choice: str) -> float:
        return _score(case.task, *_claim(case, choice, store_dir))

    return Ground(
        tasks=lambda split, n: split_tasks(split, n, store_dir),
        task_id=lambda task: task.data.id,
        context=context_of,
        executor=executor,
        root=lambda task: task.data.label.service,
        reward=reward,
        release=_release,
    )


def observe(
    learners: Sequence[Learner], tasks: list[FaultLocalisationTask], store_dir: Path | None, prune: bool = False
) -> dict[str, list[_Case]]:
    """Each task as every learner's plan saw it, by learner name; with `prune`, each log store is
    deleted once seen (2,000 stores take about 9 GB)."""
    return kit.observe(learners, tasks, ground(store_dir), prune)


def fit(learner: Learner, cases: list[_Case], seed: int) -> tuple[Any, list[str], float]:
    """The learner fit on `cases`, its feature order, and its "none" threshold (out of fold)."""
    fitted = kit_fit(learner.make, cases, seed)
    return fitted.model, fitted.keys, fitted.threshold


def _score(task: FaultLocalisationTask, claim: Claim, charged: int) -> float:
    """The real grader's score; a claim the learner makes cites no opened request, so its evidence supports nothing."""
    return grade(claim, task.data.label, charged, (False, "no request opened")).score


def score_claims(tasks: list[FaultLocalisationTask], claims: list[tuple[Claim, int]]) -> Scored:
    """Grade each (claim, charged queries) with the real grader; a claim the learner makes cites no
    opened request, so its evidence supports nothing."""
    rewards: dict[str, list[float]] = {}
    hits, chance, incidents, queries = 0, 0.0, 0, 0
    for task, (claim, charged) in zip(tasks, claims):
        label = task.data.label
        rewards[task.data.id] = [_score(task, claim, charged)]
        queries += charged
        if label.service != "none":
            incidents += 1
            hits += claim.service == label.service
            chance += 1 / len(incident_of(task.data).faults)
    return Scored(rewards, queries / max(1, len(tasks)), hits, chance, incidents)


def _claim(case: _Case, choice: str, store_dir: Path | None) -> tuple[Claim, int]:
    """The claim after the plan: "none", or one read of the chosen service for its kind."""
    if choice == kit.NONE:
        return Claim("none", "none"), case.charged
    answer = executor_for(case.task, store_dir)
    got = answer(case.ctx.search(start=case.ctx.split, limit=DESCRIBE_LIMIT, service=choice, min_level="WARN"))
    return Claim(
        choice, classify([str(line) for line in got.get("lines", [])]) or "bad_deploy"
    ), case.charged + answer.charged


def evaluate(
    learner: Learner,
    model: Any,
    keys: list[str],
    threshold: float,
    tasks: list[FaultLocalisationTask],
    store_dir: Path | None,
) -> Scored:
    """Each task played offline by the fitted learner and graded by the real grader."""
    fitted = Fitted(model, keys, threshold)
    cases = observe([learner], tasks, store_dir)[learner.name]
    return score_claims(tasks, [_claim(case, choose(fitted, case.rows)[0], store_dir) for case in cases])


def _adversary(learner: Learner, split: Split, tasks: int) -> AdversaryRun:
    with tempfile.TemporaryDirectory(prefix="fl-learner-") as tmp:
        return learned_adversary(
            learner,
            ground(Path(tmp)),
            split,
            tasks,
            train_tasks=TRAIN_TASKS,
            ceiling=SHORTCUT_CEILING,
            claim=f"learner {learner.name}, fit on {TRAIN_TASKS} train incidents, scores at most {SHORTCUT_CEILING}",
        )


def forest_windows(split: Split, tasks: int) -> AdversaryRun:
    """The forest over WARN+ counts in fixed windows, fit on `TRAIN_TASKS` train incidents, on `split`."""
    return _adversary(LEARNERS[0], split, tasks)


def logistic_names(split: Split, tasks: int) -> AdversaryRun:
    """The logistic regression over who names whom, fit on `TRAIN_TASKS` train incidents, on `split`."""
    return _adversary(LEARNERS[1], split, tasks)
