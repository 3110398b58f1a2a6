# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False
"""Fault localisation on Arena's contract: the incident's log is reachable only through the budgeted
log_search toolset; the agent reports the root-cause service, its fault kind and the failed requests
the claim rests on.

Each task is one public seed; its incident is the pure generator's `generate(incident_key(seed))`:
the generator's seed is the host's task secret over the public one (`arena_kit.task_secret`), so
the public generator run over a split's seeds finds none of the tasks' incidents. `prepare` builds
(or finds) the incident's log store on the host and hands the toolset only its path, via the
rollout state; the label stays on TaskData, which the agent's box never receives. The box, its
confinement and the rewrite rules come from `ArenaTask`; `held_out` names what they withhold.
"""

from __future__ import annotations

import asyncio
import ast
import json
import functools
import hashlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field

from fault_localisation import (
    ENVIRONMENT,
    background,
    catalogue,
    distractors,
    edge,
    fault_stream,
    plan,
    rng,
    streams,
    topology,
)
from fault_localisation import generate as generate_module
from fault_localisation.evidence import check, opened
from fault_localisation.catalogue import FAULT_KINDS
from fault_localisation.generate import Incident, Knobs, Label, generate, iso, preset
from fault_localisation.grade import RULES, Claim, grade
from fault_localisation.prompt import SYSTEM_PROMPT, task_prompt
from arena_kit import task_secret
from arena_kit.contract.task import ArenaData, ArenaTask, ArenaTaskConfig
from arena_kit.contract.taskset import ArenaTaskset, ArenaTasksetConfig
from log_search.store import ensure_store
from log_search.toolset import (
    LogSearchConfig,
    LogSearchState,
    LogSearchToolset,
    QueryRecord,
    ServiceInfo,
    Submission,
)

__all__ = [
    "FaultLocalisationConfig",
    "FaultLocalisationData",
    "FaultLocalisationTask",
    "FaultLocalisationTaskConfig",
    "FaultLocalisationTaskset",
    "incident_key",
    "incident_of",
]


SECRET_NAMESPACE = "fault-localisation"
"""The task secret's namespace for this environment's incidents."""


class FaultLocalisationData(ArenaData):
    seed: int
    """Public: the task's id within its split. The incident is drawn from `incident_key(seed)`."""
    knobs: Knobs
    """Generation knobs; with the host's secret and `seed` they reproduce the incident exactly."""
    task_secret: str = ""
    """The fingerprint of the task secret that made this task (`task_secret.fingerprint()`), never the secret."""
    budget: int
    label: Label
    """Held out: the root cause (service, fault kind). Never in the prompt or a tool result."""


class FaultLocalisationTaskConfig(ArenaTaskConfig):
    store_dir: Path | None = None
    """Host directory caching built log stores; None means ~/.cache/arena/log_search."""


class FaultLocalisationTask(ArenaTask[FaultLocalisationData, LogSearchState, FaultLocalisationTaskConfig]):
    ENVIRONMENT = ENVIRONMENT

    async def prepare(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        incident = incident_of(self.data)
        path = await asyncio.to_thread(build_incident_store, incident, self.config.store_dir)
        state = trace.state
        state.store_path = str(path)
        state.budget = self.data.budget
        state.window_start, state.window_end = iso(incident.start_ms), iso(incident.end_ms)
        state.services = [ServiceInfo(name=s.name, role=s.role, calls=list(s.calls)) for s in incident.services]
        state.fault_kinds = [kind.id for kind in FAULT_KINDS]

    async def held_out(self, trace: vf.Trace) -> Sequence[str]:
        """The label as recorded and the host path of the log store (once `prepare` has built it)."""
        return [json.dumps(asdict(self.data.label)), getattr(trace.state, "store_path", "") or ""]

    @vf.reward(weight=1.0)
    async def root_cause(self, trace: vf.Trace) -> float:
        sub, queries = _what_the_agent_did(trace)
        claim = None if sub is None else Claim(sub.service, sub.fault_kind, tuple(sub.evidence))
        support = (
            (False, "no report")
            if claim is None
            else check(claim.service, claim.evidence, incident_of(self.data), opened(queries))
        )
        result = grade(claim, self.data.label, len(queries), support)
        trace.info["grade"] = asdict(result)
        trace.info["submission"] = None if sub is None else sub.model_dump()
        trace.info["queries"] = [record.model_dump() for record in queries]
        return result.score

    @vf.metric
    async def queries_used(self, trace: vf.Trace) -> float:
        return float(len(_what_the_agent_did(trace)[1]))


def incident_key(seed: int) -> int:
    """The generator key of the task with public `seed`: the host's task secret over it."""
    return task_secret.derive(SECRET_NAMESPACE, seed)


def incident_of(data: FaultLocalisationData) -> Incident:
    """The task's incident, regenerated on the host that made the task.

    Raises:
        SecretMismatch: this host's task secret is not the one that made the task.
    """
    task_secret.require(data.task_secret, data.id)
    return generate(incident_key(data.seed), data.knobs)


def _what_the_agent_did(trace: vf.Trace) -> tuple[Submission | None, list[QueryRecord]]:
    """The submission and charged queries: from the live rollout state, or, on a trace re-scored
    offline (`vf-replay`; `trace.state` is never serialized), from what the live scoring recorded."""
    state = trace.state  # a plain vf.State on a trace read back from traces.jsonl
    if isinstance(state, LogSearchState) and (state.store_path or "queries" not in trace.info):
        return state.submission, list(state.query_log)
    recorded = trace.info.get("submission")
    return (
        None if recorded is None else Submission.model_validate(recorded),
        [QueryRecord.model_validate(q) for q in trace.info.get("queries", [])],
    )


class FaultLocalisationConfig(ArenaTasksetConfig):
    task: FaultLocalisationTaskConfig = FaultLocalisationTaskConfig()
    tools: LogSearchConfig = LogSearchConfig()
    """Placement of the shared log_search server (a host subprocess by default)."""
    num_tasks: int = Field(50, ge=1, le=1_000_000)
    """Tasks to yield: the first seeds of `split` (train from 0, dev from 1,000,000, test from 2,000,000)."""
    difficulty: Literal["easy", "medium", "hard"] = "hard"
    """A preset of the knobs below (`generate.PRESETS`): `hard` is the default mix dev and test are
    gated on; a knob set here overrides its preset value."""
    services: int | None = Field(None, ge=8, le=40)
    """Services in each incident's topology."""
    lines: int | None = Field(None, ge=1_000, le=5_000_000)
    """Approximate log lines per incident (one hour of logs)."""
    red_herrings: int | None = Field(None, ge=0, le=6)
    """Distractors per incident: a harmless deploy, an always-noisy service, a short error blip, ..."""
    decoys: int | None = Field(None, ge=0, le=8)
    """Healthy services that log fault wording all hour (pool saturation, handled exceptions, ...)."""
    mimics: int | None = Field(None, ge=0, le=6)
    """Healthy services on the users' side that write a root's own lines verbatim (all hour, or a burst)."""
    twins: int | None = Field(None, ge=0, le=6)
    """Concurrent real faults besides the users' one, each failing another endpoint of the reported edge."""
    shared_trigger: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that all of an incident's faults start within 45 s of one trigger (a zone outage)."""
    echo: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that the root's callers quote its error text, so its wording is not its own."""
    verbatim_echo: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that echoing callers pass the root's own lines on verbatim."""
    callers_first: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that the root's callers log their symptom 1-5 minutes before the root logs anything."""
    quiet_root: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that the root never logs ERROR, only WARN."""
    precursor: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that the root's first anomalous line is a sparse WARN 2-6 minutes before its storm."""
    off_path: float | None = Field(None, ge=0.0, le=1.0)
    """Chance of a stray real fault that never reaches users (it usually starts first)."""
    stray_reachable: float | None = Field(None, ge=0.0, le=1.0)
    """Chance that the stray strikes a service on the users' side whose callers degrade gracefully."""
    traces: bool | None = None
    """Whether a request's lines share one trace id across the services it crosses."""
    budget: int = Field(20, ge=1, le=500)
    """Queries (search_logs/count_logs) per rollout; the score falls for each one past RULES.free_queries."""

    def knobs(self) -> Knobs:
        """The generator's knobs: the difficulty's preset, with every knob set here on top."""
        chosen = {name: getattr(self, name) for name in _KNOB_NAMES if getattr(self, name) is not None}
        return preset(self.difficulty, **chosen)


_KNOB_NAMES = tuple(f.name for f in dataclass_fields(Knobs))


class FaultLocalisationTaskset(ArenaTaskset, vf.Taskset[FaultLocalisationTask, FaultLocalisationConfig]):
    def load(self) -> Iterator[FaultLocalisationTask]:
        cfg = self.config
        knobs = cfg.knobs()
        made_by = task_secret.fingerprint()
        for i, seed in enumerate(cfg.seeds()):
            incident = generate(incident_key(seed), knobs)
            yield FaultLocalisationTask(
                FaultLocalisationData(
                    name=f"fault-localisation/{cfg.split}#{i}",
                    id=f"{cfg.split}-{seed}",
                    prompt=task_prompt(incident, cfg.budget, RULES.free_queries),
                    system_prompt=SYSTEM_PROMPT,
                    seed=seed,
                    knobs=knobs,
                    budget=cfg.budget,
                    label=incident.label,
                    task_secret=made_by,
                ),
                cfg.task,
            )

    @classmethod
    def toolsets(cls, config: FaultLocalisationConfig) -> list[vf.Toolset]:
        return [LogSearchToolset(config.tools)]


GENERATOR_MODULES = (
    background,
    catalogue,
    distractors,
    edge,
    fault_stream,
    generate_module,
    plan,
    rng,
    streams,
    topology,
)
"""Every module whose source shapes an incident's log."""


@functools.cache
def generator_fingerprint() -> str:
    """A hash of the generator's syntax tree, so an edited generator never reuses a stale store and
    reformatting its source (which changes no tree) keeps the stores and the shipped weights."""
    digest = hashlib.sha256()
    for module in GENERATOR_MODULES:
        digest.update(ast.dump(ast.parse(inspect.getsource(module))).encode())
    return digest.hexdigest()[:12]


def build_incident_store(incident: Incident, store_dir: Path | None = None) -> Path:
    """Build (or reuse) the incident's log store; the name covers everything that shapes the log.
    It names the generator's seed (a task's secret-derived key) only by a hash: that key regenerates
    the incident, label and all."""
    knobs = hashlib.sha256(json.dumps(asdict(incident.knobs), sort_keys=True).encode()).hexdigest()[:12]
    drawn = hashlib.sha256(f"fault-localisation store {incident.seed}".encode()).hexdigest()[:16]
    key = f"fl-{generator_fingerprint()}-i{drawn}-k{knobs}"
    directory = store_dir if store_dir is not None else Path.home() / ".cache" / "arena" / "log_search"
    return ensure_store(directory, key, incident.rows, {"incident": drawn})
