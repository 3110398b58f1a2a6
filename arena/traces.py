"""Read a vf-eval run's `traces.jsonl` (and the live `rewrites.jsonl`) into typed episodes: the one
reader evalrun, audit, probe and the bench share, and the one place the reward formula lives.

Tolerant where a run can be cut short: vf-eval appends one JSON line per finished episode, so a
run killed mid-write leaves a truncated last line. That line is skipped and reported (in
`TraceLog.skipped` and the log), never raised as a bare JSONDecodeError; a garbled line before
the last is corruption, not a cut, and raises `TraceError` naming the file and line; so does a
line that is JSON but no vf-eval episode, and a file that cannot be read. Fields of an unexpected
shape (another version's, or hostile) read as absent, never as a crash. `TraceFollower` reads a file
that is still growing, line by completed line, for the live viewer.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeGuard

from pydantic import ValidationError

from arena.errors import TraceError
from arena_kit.records import REWRITES_FILE, AuditRecord

__all__ = [
    "AGENT_STOPS",
    "GOOD_STOPS",
    "INFRA_STOPS",
    "TRACES_FILE",
    "Episode",
    "TraceFollower",
    "TraceLine",
    "TraceLog",
    "read_live_rewrites",
    "read_traces",
    "no_constant",
    "reward_of",
    "task_rewards",
]

TRACES_FILE = "traces.jsonl"
GOOD_STOPS = frozenset(
    {"agent_completed", "user_closed", "max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens", None}
)
"""Stop conditions of an agent that ran to its end, or to a limit of its rollout (verifiers.v1's
`RolloutLimits.reached` names: the rollout is still scored, the agent's outcome); anything else (a
timeout, an error...) is a failed episode."""
INFRA_STOPS = {
    "engineunreachable_error": "engine unreachable",
    "boxlost_error": "box lost",
    "startmissed_error": "start missed",
}
"""The stop conditions of the lean runtime's typed infrastructure faults (`arena_kit.errors`:
verifiers writes `<class name without Error, lowercased>_error`) and what each says, for reports."""
AGENT_STOPS = {
    "boxoom_error": "box out of memory",
    "agentkilledbox_error": "agent killed its box's processes",
    "boxoverbound_error": "box over a bound of the eval process",
}
"""The stop conditions of the faults an agent makes of its own box (`arena_kit.box.faults`: the engine's
word, never retried) and what each says: the agent's outcome, scored 0, not a failed episode."""

logger = logging.getLogger(__name__)


def reward_of(rewards: Mapping[str, object]) -> float | None:
    """A trace's reward: the sum of score × weight over its signals (None if any failed to score:
    a signal that is null, has no numeric score or weight, or sums to no finite number)."""
    total = 0.0
    for signal in rewards.values():
        if not isinstance(signal, dict):
            return None
        score, weight = signal.get("score"), signal.get("weight", 1.0)
        if not _number(score) or not _number(weight):
            return None
        total += float(score) * float(weight)
    return total if math.isfinite(total) else None


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
    image: str = ""
    """The image the box ran (the task's own, which stands in for the runtime config's default)."""
    id: str = ""
    """The trace id (what audit records call the rollout)."""
    rewrites: tuple[AuditRecord, ...] = ()
    """Every rewrite or denial recorded in the episode's traces (`trace.info.arena_rewrites`)."""
    usage: Mapping[str, int] = field(default_factory=dict)
    """Tokens the episode's model calls used: `input`, `output`, and where the calls report them
    `cached_input` and `reasoning` (summed over `trace.calls[].usage`, else the trace's
    `num_input_tokens` / `num_output_tokens`); empty when the trace records none."""
    model: str = ""
    """The model its calls went to (the first call's)."""

    @property
    def failed(self) -> bool:
        """Whether the episode ended without a result: verifiers' `ok` stamp says so (an episode
        whose earlier attempts failed and were retried keeps their errors and is ok), or the agent
        was stopped short (a timeout; a rollout limit such as `max_turns` is no failure). An agent's fault (`agent_fault`) is a result: the agent's, 0."""
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
    def infra_failed(self) -> bool:
        """Failed on a typed infrastructure fault (`INFRA_STOPS`) its retries did not outlast: no
        outcome of the agent's, so left out of its run's mean and counted beside it."""
        return self.failed and self.infra_fault is not None

    @property
    def score(self) -> float | None:
        """What the episode adds to its run's mean: None when it `infra_failed` (left out); 0 when it
        failed any other way or its grader gave no reward (the platform cannot tell the agent
        blameless, and an agent that broke its box or ran out its clock must not be dropped from
        its mean); otherwise its reward."""
        if self.infra_failed:
            return None
        return 0.0 if self.failed or self.reward is None else self.reward

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


def task_rewards(episodes: Iterable[Episode]) -> dict[str, list[float]]:
    """task → the scores of its episodes (`Episode.score`; infrastructure failures left out): what
    every mean of a run is taken over (each task's mean, then the mean over tasks)."""
    out: dict[str, list[float]] = {}
    for episode in episodes:
        if episode.score is not None:
            out.setdefault(episode.task, []).append(episode.score)
    return out


def read_traces(run_dir: Path) -> TraceLog:
    """The episodes of `<run_dir>/traces.jsonl` (a missing file: none).

    Raises:
        TraceError: the file cannot be read (a directory, no permission), a line before the last is
            not JSON, a line is JSON but not a vf-eval episode, or a recorded rewrite is malformed.
    """
    follower = TraceFollower(run_dir / TRACES_FILE)
    lines = follower.read(final=True)
    return TraceLog(path=follower.path, episodes=[line.episode for line in lines], skipped=follower.skipped)


@dataclass(frozen=True)
class TraceLine:
    """An episode and where its line is in `traces.jsonl` (to read it again on demand)."""

    number: int
    offset: int
    length: int
    episode: Episode


class TraceFollower:
    """Reads a `traces.jsonl` that may still be growing: each `read` returns the episodes of the
    lines completed since the last one. A line without its newline is a write in progress and is
    left for the next read, unless `final` (nothing more will come: it was cut short and is
    skipped, with the reason in `skipped`). A complete line that is not JSON is corruption once
    another line follows it; while it is the last, it is skipped as a write cut short."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        """Bytes read so far (always at the end of a complete line)."""
        self.number = 0
        """Physical lines read so far."""
        self.skipped: str | None = None
        self._bad: tuple[int, str] | None = None

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def read(self, final: bool = False) -> list[TraceLine]:
        """The episodes of the lines completed since the last read.

        Raises:
            TraceError: as `read_traces`.
        """
        if not self.path.exists():
            return []
        if self.path.is_dir():
            raise TraceError(f"{self.path} is a directory, not a traces file: give the directory of one vf-eval run")
        if not self.path.is_file():  # a FIFO or a device (/dev/zero) would block or never end
            raise TraceError(f"{self.path} is not a regular file: vf-eval writes traces.jsonl as one")
        try:
            with self.path.open("rb") as f:
                if f.seek(0, 2) < self.offset:
                    raise TraceError(
                        f"{self.path} shrank while it was read (the run was restarted with --clean?): reopen it"
                    )
                f.seek(self.offset)
                return self._lines(f, final)
        except OSError as exc:
            raise TraceError(f"cannot read {self.path}: {exc.strerror or exc}") from None

    def _lines(self, f: BinaryIO, final: bool) -> list[TraceLine]:
        out: list[TraceLine] = []
        while raw := f.readline():
            complete = raw.endswith(b"\n")
            if not complete and not final:
                break  # a write in progress: read again next time
            offset = self.offset
            self.offset += len(raw)
            self.number += 1
            if not raw.strip():
                continue
            if self._bad is not None:
                number, problem = self._bad
                raise TraceError(
                    f"{problem}; only the last line may be cut short, so the file is corrupt: re-run the eval"
                )
            row = self._parse(raw, final and not complete)
            if row is not None:
                out.append(TraceLine(self.number, offset, len(raw), _episode(self.path, self.number, row)))
        if self._bad is not None:
            self.skipped = f"{self._bad[1]}: skipped it as a write cut short (was the run interrupted?)"
            logger.warning("%s", self.skipped)
        return out

    def _parse(self, raw: bytes, cut: bool) -> dict[str, Any] | None:
        where = f"line {self.number} of {self.path}"
        try:
            value = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=no_constant)
        except json.JSONDecodeError as exc:
            self._bad = (self.number, f"{where} is not JSON ({exc.msg} at column {exc.colno})")
            return None
        except RecursionError:
            raise TraceError(f"{where} is JSON nested too deeply to read: re-run the eval") from None
        if not isinstance(value, dict):
            raise TraceError(
                f"{where} is a JSON {type(value).__name__}, not a vf-eval episode (an object with its traces)"
            )
        traces = value.get("traces")
        if not isinstance(traces, list) or not traces or not isinstance(traces[0], dict):
            raise TraceError(
                f'{where} is JSON but not a vf-eval episode (no "traces" list): is this a traces.jsonl vf-eval wrote?'
            )
        return value


def no_constant(name: str) -> None:
    """`json.loads`'s `parse_constant`: NaN and ±Infinity (which Python writes and no other JSON
    reader accepts) read as null, so nothing non-finite travels on to a report or a page."""
    return None


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
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
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
        raise TraceError(
            f"line {number} of {path}: a malformed rewrite record ({exc.error_count()} problem(s): {exc.errors()[0]['msg']})"
        ) from None


def _obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (a field another version wrote otherwise)."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _episode(path: Path, number: int, row: Mapping[str, Any]) -> Episode:
    traces = [t for t in _list(row.get("traces")) if isinstance(t, dict)]
    trace = traces[0]
    data = _obj(_obj(row.get("task")).get("data")) or _obj(_obj(trace.get("task")).get("data"))
    name = next((data[k] for k in ("name", "id", "idx") if data.get(k) not in (None, "")), None)
    rewards = {str(k): v for k, v in _obj(trace.get("rewards")).items()}
    stop = trace.get("stop_condition")
    stop = stop if isinstance(stop, str) else None
    return Episode(
        task=str(name) if name is not None else f"(no task name: line {number})",
        ok=bool(row.get("ok")) and bool(trace.get("ok", True)),
        errors=[e for e in [*_list(row.get("errors")), *_list(trace.get("errors"))] if isinstance(e, dict)],
        stop_condition=stop,
        # An agent's fault scores 0 whatever its signals read (verifiers does not score a failed rollout).
        reward=0.0 if stop in AGENT_STOPS else reward_of(rewards),
        rewards=rewards,
        metrics=_obj(trace.get("metrics")),
        info=_obj(trace.get("info")),
        timing=_obj(trace.get("timing")),
        turns=len(_list(trace.get("calls"))),
        runtime_id=str(_obj(_obj(trace.get("agent")).get("runtime")).get("id") or ""),
        image=str(_obj(_obj(trace.get("agent")).get("runtime")).get("image") or ""),
        id=str(trace.get("id") or ""),
        rewrites=tuple(_record(path, number, raw) for raw in _rewrites(traces)),
        usage=_usage(trace),
        model=next((str(c["model"]) for c in _list(trace.get("calls")) if isinstance(c, dict) and c.get("model")), ""),
    )


USAGE_KEYS = {
    "input": "prompt_tokens",
    "output": "completion_tokens",
    "cached_input": "cached_input_tokens",
    "reasoning": "reasoning_tokens",
}


def _usage(trace: Mapping[str, Any]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for call in _list(trace.get("calls")):
        usage = _obj(_obj(call).get("usage"))
        for name, key in USAGE_KEYS.items():
            value = usage.get(key)
            if _number(value):
                totals[name] = totals.get(name, 0) + int(value)
    for name, key in (("input", "num_input_tokens"), ("output", "num_output_tokens")):
        value = trace.get(key)
        if name not in totals and _number(value):
            totals[name] = int(value)
    return totals


def _rewrites(traces: Iterable[Mapping[str, Any]]) -> list[object]:
    return [raw for trace in traces for raw in _list(_obj(trace.get("info")).get("arena_rewrites"))]
