"""What `arena view` shows, read from run directories: a catalog of runs (summaries with their
intervals, one row per episode, probe gates, paired comparisons) and, on demand, one episode's
transcript.

The catalog goes through `arena.traces` (the one trace reader) and keeps each line's byte span,
so a transcript is one seek and one JSON parse when it is opened: a 1,000-episode run opens
without building 1,000 transcripts. Everything here is data (JSON-ready dicts); nothing is markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import PrerequisiteError, UsageError
from arena.evalrun import saved_config
from arena.stats import by_task, clustered_mean, paired_difference
from arena.traces import TRACES_FILE, Episode, read_traces
from arena_kit.records import AuditRecord

__all__ = ["Catalog", "Run", "discover", "load_catalog", "transcript"]

MAX_PAIRS = 2000
"""Paired comparisons precomputed at most (runs sharing tasks); past that, compare on the command line."""


@dataclass(frozen=True)
class Run:
    index: int
    path: Path
    summary: dict[str, Any]
    episodes: list[dict[str, Any]]
    spans: list[tuple[int, int]]
    """(byte offset, length) of each episode's line in traces.jsonl."""
    ids: list[str] = field(default_factory=list)
    """Each episode's trace id, to check a span still holds its episode."""


@dataclass(frozen=True)
class Catalog:
    runs: list[Run]
    probes: list[dict[str, Any]]
    pairs: list[dict[str, Any]]

    def index(self) -> dict[str, Any]:
        """Everything the runs, episodes and compare pages need (no transcripts)."""
        return {
            "runs": [{**run.summary, "episodes": run.episodes} for run in self.runs],
            "probes": self.probes,
            "pairs": self.pairs,
        }

    def transcript(self, run: int, episode: int) -> dict[str, Any]:
        """One episode's page data.

        Raises:
            UsageError: no such run or episode.
        """
        if not 0 <= run < len(self.runs) or not 0 <= episode < len(self.runs[run].episodes):
            raise UsageError(f"no episode {episode} in run {run}")
        return transcript(self.runs[run], episode)


def discover(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The run directories (holding traces.jsonl) and probe directories (probe.json) under `paths`:
    each path is a run, or a directory whose children (or grandchildren) are.

    Raises:
        PrerequisiteError: a path is missing, or holds no run at all.
    """
    runs: list[Path] = []
    probes: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise PrerequisiteError(f"{path} is not a directory: give vf-eval run directories or a directory holding them")
        found = [path] if (path / TRACES_FILE).is_file() else sorted(p.parent for p in path.glob(f"*/{TRACES_FILE}"))
        if not found:
            found = sorted(p.parent for p in path.glob(f"*/*/{TRACES_FILE}"))
        probes += sorted({p.parent for p in path.glob("probe.json")} | {p.parent for p in path.glob("*/probe.json")})
        if not found:
            raise PrerequisiteError(f"{path} holds no {TRACES_FILE} (nor do its subdirectories): "
                                    "give a vf-eval run directory, a probe directory or a demo's outputs directory")
        runs += [run for run in found if run not in runs]
    return runs, probes


def load_catalog(paths: Sequence[Path]) -> Catalog:
    """Read every run under `paths` (see `discover`).

    Raises:
        PrerequisiteError: a path holds no run.
        TraceError: a traces.jsonl is corrupt before its last line.
    """
    run_dirs, probe_dirs = discover(paths)
    runs = [_load_run(i, path) for i, path in enumerate(run_dirs)]
    return Catalog(runs=runs, probes=[_probe(p) for p in probe_dirs], pairs=_pairs(runs))


def _load_run(index: int, path: Path) -> Run:
    log = read_traces(path)
    episodes = [_row(i, e) for i, e in enumerate(log.episodes)]
    rewards = [row["score"] for row in episodes]
    interval = clustered_mean(rewards, [e.task for e in log.episodes])
    config = _config(path)
    starts = [float(e.timing["start"]) for e in log.episodes if isinstance(e.timing.get("start"), (int, float))]
    ends = [_end(e.timing) for e in log.episodes]
    model = str(config.get("model") or "")
    summary = {
        "id": index, "name": path.name, "path": str(path),
        "env": _dig(config, "env", "taskset", "id"), "harness": _dig(config, "env", "agent", "harness", "id"),
        "model": model, "policy": model.rsplit("/", 1)[-1] if model.startswith("arena/") else "",
        "split": _dig(config, "env", "taskset", "split"),
        "count": len(episodes), "tasks": interval.tasks,
        "mean": _num(interval.mean), "low": _num(interval.low), "high": _num(interval.high), "ci": interval.text(),
        "method": interval.method,
        "failures": sum(row["failed"] for row in episodes), "retries": sum(row["retries"] for row in episodes),
        "rewrites": sum(row["rewrites"] - row["denials"] for row in episodes), "denials": sum(row["denials"] for row in episodes),
        "wall": round(max(ends) - min(starts), 1) if starts and ends else None,
        "budget": _budget(path / TRACES_FILE),
        "warning": log.skipped or "",
    }
    return Run(index=index, path=path, summary=summary, episodes=episodes, spans=_spans(path / TRACES_FILE),
               ids=[e.id for e in log.episodes])


def _row(index: int, e: Episode) -> dict[str, Any]:
    grade = _obj(e.info.get("grade"))
    parts = {k: v for k, v in grade.items() if k not in ("reason", "score") and isinstance(v, (int, float, str, bool))}
    used = {k: v for k, v in e.metrics.items() if k.endswith("_used") and v is not None}
    error = next((str(x.get("message") or x.get("type") or "") for x in reversed(e.errors)), "")
    return {
        "i": index, "task": e.task, "reward": e.reward, "score": 0.0 if e.failed or e.reward is None else e.reward,
        "failed": e.failed, "reason": str(grade.get("reason") or ""), "parts": parts,
        "stop": e.stop_condition or "", "turns": e.turns,
        "used": next(iter(used.values()), None), "used_name": next(iter(used), ""),
        "retries": e.retries, "errors": len(e.errors), "error": error[:300],
        "rewrites": len(e.rewrites), "denials": sum(r.stage == "pre" for r in e.rewrites),
        "wall": _wall(e.timing),
    }


def transcript(run: Run, index: int) -> dict[str, Any]:
    """The episode page's data: the transcript in order, with every rewrite or denial inline, the
    submission, the grade and the timing of each phase."""
    row = _line(run, index)
    traces = row.get("traces") or [{}]
    trace = _obj(traces[0])
    info = _obj(trace.get("info"))
    records = [AuditRecord.model_validate(raw) for raw in info.get("arena_rewrites") or []]
    items = _items(trace.get("nodes") or [], records)
    return {
        "run": run.index, "i": index, "summary": run.episodes[index], "run_name": run.summary["name"],
        "items": items,
        "submission": info.get("submission"),
        "grade": info.get("grade"),
        "rewards": trace.get("rewards") or {}, "metrics": trace.get("metrics") or {},
        "timing": _phases(trace.get("timing") or {}),
        "errors": [{"type": str(x.get("type") or ""), "message": str(x.get("message") or ""), "traceback": str(x.get("traceback") or "")}
                   for x in [*(row.get("errors") or []), *(trace.get("errors") or [])] if isinstance(x, dict)],
        "task": (trace.get("task") or row.get("task") or {}).get("data"),
        "info": {k: v for k, v in info.items() if k not in ("grade", "submission", "arena_rewrites")},
        "model_calls": len(trace.get("calls") or []),
    }


def _items(nodes: Iterable[Any], records: Sequence[AuditRecord]) -> list[dict[str, Any]]:
    """The messages in commit order, tool calls with their results, and each rewrite or denial
    where it happened: on the tool result that carries its replacement, else at its time."""
    items: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    unplaced = list(records)
    for node in nodes:
        if not isinstance(node, dict):
            continue
        message = _obj(node.get("message")) or node
        role = str(message.get("role") or "?")
        at = node.get("timestamp")
        item: dict[str, Any] = {"kind": role, "text": _text(message.get("content")), "t": at, "sampled": bool(node.get("sampled"))}
        if role == "assistant":
            item["reasoning"] = str(message.get("reasoning_content") or "")
            item["calls"] = [_call(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            calls.update((c["id"], c) for c in item["calls"])
        elif role == "tool":
            call = calls.get(str(message.get("tool_call_id") or ""))
            item["call"] = call["name"] if call else str(message.get("name") or "")
            item["call_id"] = str(message.get("tool_call_id") or "")
            record = next((r for r in unplaced if r.replacement.strip() and r.replacement.strip() in item["text"]), None)
            if record is not None:
                unplaced.remove(record)
                item["rewrite"] = _record(record)
        items.append(item)
    for record in sorted(unplaced, key=lambda r: r.time):
        position = sum(1 for it in items if isinstance(it.get("t"), (int, float)) and it["t"] <= record.time)
        items.insert(position, {"kind": "rewrite", "t": record.time, **_record(record)})
    return items


def _record(r: AuditRecord) -> dict[str, Any]:
    return {"rule": r.rule, "stage": r.stage, "denial": r.stage == "pre", "tool": r.tool,
            "arguments": json.dumps(r.arguments, indent=1, ensure_ascii=False), "replacement": r.replacement,
            "excerpt": r.original_excerpt, "sha256": r.original_sha256}


def _call(raw: Mapping[str, Any]) -> dict[str, Any]:
    arguments = raw.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.dumps(json.loads(arguments), indent=1, ensure_ascii=False)
        except ValueError:
            pass
    else:
        arguments = json.dumps(arguments, indent=1, ensure_ascii=False)
    return {"id": str(raw.get("id") or ""), "name": str(raw.get("name") or ""), "arguments": str(arguments)}


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) and p.get("type") == "text" else "[non-text part]" for p in content)
    return json.dumps(content, ensure_ascii=False)


PHASES = ("boot", "setup", "agent", "finalize", "scoring")


def _phases(timing: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in PHASES:
        span = timing.get(name)
        if isinstance(span, dict) and isinstance(span.get("end"), (int, float)) and span["end"]:
            out.append({"phase": name, "seconds": round(max(0.0, span["end"] - float(span.get("start") or 0.0)), 3)})
            for part in ("model", "harness"):
                split = span.get(part)
                if isinstance(split, dict) and isinstance(split.get("duration"), (int, float)):
                    out.append({"phase": f"{name}: {part}", "seconds": round(float(split["duration"]), 3)})
    return out


def _end(timing: Mapping[str, Any]) -> float:
    ends = [float(span["end"]) for span in timing.values() if isinstance(span, dict) and isinstance(span.get("end"), (int, float))]
    return max(ends, default=float(timing.get("start") or 0.0))


def _wall(timing: Mapping[str, Any]) -> float | None:
    start = timing.get("start")
    return round(_end(timing) - float(start), 2) if isinstance(start, (int, float)) else None


def _budget(path: Path) -> float | None:
    """The run's budget of queries or statements: a `*budget` number in its first task's data
    (the environments set it per taskset, so one task speaks for the run); None if there is none."""
    with path.open("rb") as f:
        first = next((line for line in f if line.strip()), b"")
    try:
        data = _obj(_obj(json.loads(first).get("task")).get("data")) if first else {}
    except (ValueError, AttributeError):
        return None
    return next((float(v) for k, v in data.items() if k.endswith("budget") and isinstance(v, (int, float))), None)


def _spans(path: Path) -> list[tuple[int, int]]:
    """(offset, length) of every non-blank line, in the order `arena.traces` numbers episodes."""
    spans: list[tuple[int, int]] = []
    offset = 0
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                spans.append((offset, len(line)))
            offset += len(line)
    return spans


def _line(run: Run, index: int) -> dict[str, Any]:
    path = run.path / TRACES_FILE
    if index < len(run.spans):
        offset, length = run.spans[index]
        with path.open("rb") as f:
            f.seek(offset)
            row = json.loads(f.read(length))
        if isinstance(row, dict) and _trace_id(row) == run.ids[index]:
            return row
    # The file changed since it was indexed (a run still going): find the episode by its id.
    for raw in path.read_bytes().splitlines():
        if raw.strip():
            row = json.loads(raw)
            if isinstance(row, dict) and _trace_id(row) == run.ids[index]:
                return row
    raise UsageError(f"episode {index} of {run.path} is no longer in its {TRACES_FILE}")


def _trace_id(row: Mapping[str, Any]) -> str:
    traces = row.get("traces") or [{}]
    return str((traces[0] if isinstance(traces[0], dict) else {}).get("id") or "")


def _obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (a trace written by another version)."""
    return value if isinstance(value, dict) else {}


def _config(path: Path) -> dict[str, Any]:
    try:
        return saved_config(path) or {}
    except UsageError:
        return {}


def _dig(data: Mapping[str, Any], *keys: str) -> str:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def _probe(path: Path) -> dict[str, Any]:
    try:
        saved = json.loads((path / "probe.json").read_text())
    except (OSError, ValueError) as exc:
        return {"path": str(path), "error": f"probe.json unreadable: {exc}", "scores": [], "failures": []}
    keys = ("env", "policy", "role", "episodes", "failed", "mean", "ci95", "min", "max", "turns", "budget_used", "rewrites", "retries")
    return {
        "path": str(path), "name": path.name, "harness": str(saved.get("harness", "")), "split": str(saved.get("split", "")),
        "tasks": saved.get("tasks"), "complete": bool(saved.get("complete")),
        "passed": bool(saved.get("complete")) and not saved.get("failures"),
        "scores": [{k: s.get(k) for k in keys} for s in saved.get("scores") or [] if isinstance(s, dict)],
        "failures": [{"env": str(f.get("env", "")), "rule": str(f.get("rule", "")), "detail": str(f.get("detail", ""))}
                     for f in saved.get("failures") or [] if isinstance(f, dict)],
    }


def _pairs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The paired difference of every two runs that share a task (B − A, A the earlier run)."""
    rewards = [by_task((row["task"], row["score"]) for row in run.episodes) for run in runs]
    pairs: list[dict[str, Any]] = []
    for a in range(len(runs)):
        for b in range(a + 1, len(runs)):
            if len(pairs) >= MAX_PAIRS or not rewards[a].keys() & rewards[b].keys():
                continue
            d = paired_difference(rewards[a], rewards[b])
            i = d.interval
            pairs.append({"a": a, "b": b, "tasks": i.tasks, "diff": _num(i.mean), "low": _num(i.low), "high": _num(i.high),
                          "ci": i.text(), "method": i.method, "differing": [task for task, _, _ in d.differing]})
    return pairs
