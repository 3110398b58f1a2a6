"""Read a vf-eval run's `traces.jsonl` (and the live `rewrites.jsonl`) into typed episodes: the one
reader evalrun, audit, probe and the bench share, and the one place the reward formula lives.

Tolerant where a run can be cut short: vf-eval appends one JSON line per finished episode, so a
run killed mid-write leaves a truncated last line. That line is skipped and reported (in
`TraceLog.skipped` and the log), never raised as a bare JSONDecodeError; a garbled line before
the last is corruption, not a cut, and raises `TraceError` naming the file and line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from arena.errors import TraceError
from arena_kit.records import REWRITES_FILE, AuditRecord

__all__ = [
    "AGENT_STOPS",
    "GOOD_STOPS",
    "INFRA_STOPS",
    "TRACES_FILE",
    "Episode",
    "TraceLog",
    "read_live_rewrites",
    "read_traces",
    "reward_of",
]

TRACES_FILE = "traces.jsonl"
GOOD_STOPS = frozenset({"agent_completed", "user_closed", "max_turns_reached", None})
"""Stop conditions of an agent that ran to its end (anything else: a timeout, an error...)."""
INFRA_STOPS = {
    "engineunreachable_error": "engine unreachable",
    "boxlost_error": "box lost",
    "startmissed_error": "start missed",
}
"""The stop conditions of the lean runtime's typed infrastructure faults (`arena_kit.runtimes.lean_docker.faults`:
verifiers writes `<class name without Error, lowercased>_error`) and what each says, for reports."""
AGENT_STOPS = {
    "boxoom_error": "box out of memory",
    "agentkilledbox_error": "agent killed its box's processes",
    "boxoverbound_error": "box over a bound of the eval process",
}
"""The stop conditions of the faults an agent makes of its own box (`arena_kit.box_faults`: the engine's
word, never retried) and what each says: the agent's outcome, scored 0, not a failed episode."""

logger = logging.getLogger(__name__)


def reward_of(rewards: Mapping[str, Mapping[str, Any]]) -> float | None:
    """A trace's reward: the sum of score × weight over its signals (None if any failed to score)."""
    if any(signal.get("score") is None for signal in rewards.values()):
        return None
    return float(sum(signal["score"] * signal.get("weight", 1.0) for signal in rewards.values()))


@dataclass(frozen=True)
class Episode:
    """One line of `traces.jsonl`: an episode, read through its first (in Arena: only) trace."""

    task: str
    ok: bool
    errors: list[dict[str, Any]]
    stop_condition: str | None
    reward: float | None
    rewards: dict[str, Any]
    metrics: dict[str, Any]
    info: dict[str, Any]
    timing: dict[str, Any]
    turns: int
    runtime_id: str = ""
    """The id of the box the rollout ran in (a container id on docker)."""
    id: str = ""
    """The trace id (what audit records call the rollout)."""
    rewrites: tuple[AuditRecord, ...] = ()
    """Every rewrite or denial recorded in the episode's traces (`trace.info.arena_rewrites`)."""

    @property
    def failed(self) -> bool:
        """Whether the episode ended without a result: verifiers' `ok` stamp says so (an episode
        whose earlier attempts failed and were retried keeps their errors and is ok), or the agent
        was stopped short (a timeout). An agent's fault (`agent_fault`) is a result: the agent's, 0."""
        return self.agent_fault is None and (not self.ok or self.stop_condition not in GOOD_STOPS)

    @property
    def agent_fault(self) -> str | None:
        """The fault the agent made of its own box (`AGENT_STOPS`), None for any other end."""
        return AGENT_STOPS.get(self.stop_condition or "")

    @property
    def infra_fault(self) -> str | None:
        """The infrastructure fault the episode ended on (`INFRA_STOPS`), None for any other end."""
        return INFRA_STOPS.get(self.stop_condition or "")

    @property
    def retries(self) -> int:
        """Attempts verifiers' retry rules re-ran: each failed attempt left its error on the trace
        (the last error of a failed episode is its outcome, not a retry)."""
        return max(len(self.errors) - (0 if self.ok else 1), 0)


@dataclass(frozen=True)
class TraceLog:
    path: Path
    episodes: list[Episode] = field(default_factory=list)
    skipped: str | None = None
    """Why the last line was skipped (a run cut short mid-write), if it was."""

    @property
    def exists(self) -> bool:
        return self.path.exists()


def read_traces(run_dir: Path) -> TraceLog:
    """The episodes of `<run_dir>/traces.jsonl` (a missing file: none).

    Raises:
        TraceError: a line before the last is not a JSON object, or a recorded rewrite is malformed.
    """
    path = run_dir / TRACES_FILE
    rows, skipped = _json_lines(path)
    return TraceLog(path=path, episodes=[_episode(path, number, row) for number, row in rows], skipped=skipped)


def read_live_rewrites(run_dir: Path) -> tuple[list[AuditRecord], str | None]:
    """The records the rewrite hook appended to `<run_dir>/rewrites.jsonl` as rules fired, and why
    a last line was skipped, if one was (the hook may be mid-write).

    Raises:
        TraceError: an earlier line is not a valid record.
    """
    path = run_dir / REWRITES_FILE
    rows, skipped = _json_lines(path)
    return [_record(path, number, row) for number, row in rows], skipped


def _json_lines(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], str | None]:
    """(line number, object) of every non-blank line; a bad last line is skipped with a reason."""
    if not path.exists():
        return [], None
    numbered = [(n, line) for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1) if line.strip()]
    rows: list[tuple[int, dict[str, Any]]] = []
    for index, (number, line) in enumerate(numbered):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problem = f"line {number} of {path} is not JSON ({exc.msg} at column {exc.colno})"
        else:
            if isinstance(value, dict):
                rows.append((number, value))
                continue
            problem = f"line {number} of {path} is a JSON {type(value).__name__}, not an object"
        if index < len(numbered) - 1:
            raise TraceError(f"{problem}; only the last line may be cut short, so the file is corrupt: re-run the eval")
        skipped = f"{problem}: skipped it as a write cut short (was the run interrupted?)"
        logger.warning("%s", skipped)
        return rows, skipped
    return rows, None


def _record(path: Path, number: int, raw: object) -> AuditRecord:
    try:
        return AuditRecord.model_validate(raw)
    except ValidationError as exc:
        raise TraceError(f"line {number} of {path}: a malformed rewrite record ({exc.error_count()} problem(s): {exc.errors()[0]['msg']})") from None


def _episode(path: Path, number: int, row: Mapping[str, Any]) -> Episode:
    traces: list[dict[str, Any]] = list(row.get("traces") or []) or [{}]
    trace = traces[0]
    data = (row.get("task") or {}).get("data") or {}
    rewards = trace.get("rewards") or {}
    return Episode(
        task=str(data.get("name") or data.get("id") or data.get("idx")),
        ok=bool(row.get("ok")) and bool(trace.get("ok", True)),
        errors=[*(row.get("errors") or []), *(trace.get("errors") or [])],
        stop_condition=trace.get("stop_condition"),
        # An agent's fault scores 0 whatever its signals read (verifiers does not score a failed rollout).
        reward=0.0 if trace.get("stop_condition") in AGENT_STOPS else reward_of(rewards),
        rewards=rewards,
        metrics=trace.get("metrics") or {},
        info=trace.get("info") or {},
        timing=trace.get("timing") or {},
        turns=len(trace.get("calls") or []),
        runtime_id=str(((trace.get("agent") or {}).get("runtime") or {}).get("id") or ""),
        id=str(trace.get("id") or ""),
        rewrites=tuple(_record(path, number, raw) for raw in _rewrites(traces)),
    )


def _rewrites(traces: Iterable[Mapping[str, Any]]) -> list[object]:
    return [raw for trace in traces for raw in (trace.get("info") or {}).get("arena_rewrites") or []]
