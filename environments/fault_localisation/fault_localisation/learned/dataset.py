"""Training examples: each split incident's plans played offline against its cached log store, with the label."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from arena_kit.adversaries.learned.offline import drive
from arena_kit.policy import Observation
from fault_localisation.generate import iso
from fault_localisation.learned.executor import Executor
from fault_localisation.learned.plan import VARIANTS, Observed, observe
from fault_localisation.observe import Context
from fault_localisation.taskset import FaultLocalisationTask, build_incident_store, incident_of
from log_search.store import LogStore

__all__ = ["Example", "context_of", "examples", "executor_for"]


@dataclass(frozen=True)
class Example:
    """One incident as each variant's plan saw it."""

    seed: int
    root: str
    """The label's service ("none" on a control)."""
    ctx: Context
    seen: dict[str, Observed]
    """By variant."""
    queries: dict[str, int]
    """Charged queries each variant's plan spent."""


def context_of(task: FaultLocalisationTask) -> Context:
    return Context.of(
        Observation(model="", system="", prompt=task.data.prompt_text, tools=(), steps=(), dialect="chat")
    )


def executor_for(task: FaultLocalisationTask, store_dir: Path | None = None) -> Executor:
    """The task's tools offline, its log store built (or found) in `store_dir` as the task's setup would."""
    incident = incident_of(task.data)
    store = LogStore(build_incident_store(incident, store_dir))
    services = [{"name": s.name, "role": s.role, "calls": list(s.calls)} for s in incident.services]
    return Executor(store, {"start": iso(incident.start_ms), "end": iso(incident.end_ms)}, services)


def examples(
    tasks: list[FaultLocalisationTask],
    store_dir: Path | None = None,
    variants: tuple[str, ...] = VARIANTS,
    prune: bool = False,
) -> Iterator[Example]:
    """Each task as every variant's plan saw it; with `prune`, each log store is deleted once seen
    (2,000 stores take about 9 GB)."""
    for task in tasks:
        ctx = context_of(task)
        answer = executor_for(task, store_dir)
        seen, queries = {}, {}
        for variant in variants:
            answer.charged = 0
            seen[variant] = drive(observe(ctx, variant), answer)
            queries[variant] = answer.charged
        if prune:
            answer.store.path.unlink(missing_ok=True)
        yield Example(task.data.seed, task.data.label.service, ctx, seen, queries)
