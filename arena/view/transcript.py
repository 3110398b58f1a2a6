"""One episode's page, from its `traces.jsonl` line: the messages in order with each tool call's
arguments parsed, each rewrite or denial where it happened, per-turn times and tokens, a timeline of
the episode's phases, model calls, tool calls and the gate's denials and rewrites, the submission
and the grade. Data only (JSON-ready); the front end decides how it looks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from arena_kit.records import AuditRecord

__all__ = ["PHASES", "transcript"]

PHASES = ("boot", "setup", "agent", "finalize", "scoring")


def transcript(row: Mapping[str, Any]) -> dict[str, Any]:
    """The episode page's data for one `traces.jsonl` line (an episode object)."""
    traces = _list(row.get("traces"))
    trace = _obj(traces[0] if traces else None)
    info = _obj(trace.get("info"))
    records = _records(info.get("arena_rewrites"))
    timing = _obj(trace.get("timing"))
    start = _float(timing.get("start"))
    calls = [_obj(c) for c in _list(trace.get("calls"))]
    items = _items(_list(trace.get("nodes")), records, calls)
    return {
        "items": items,
        "start": start,
        "submission": info.get("submission"),
        "grade": info.get("grade"),
        "rewards": _obj(trace.get("rewards")),
        "metrics": _obj(trace.get("metrics")),
        "phases": _phases(timing),
        "timeline": _timeline(timing, calls, items, records),
        "errors": [
            {
                "type": str(x.get("type") or ""),
                "message": str(x.get("message") or ""),
                "traceback": str(x.get("traceback") or ""),
            }
            for x in [*_list(row.get("errors")), *_list(trace.get("errors"))]
            if isinstance(x, dict)
        ],
        "task": _obj(_obj(trace.get("task") or row.get("task")).get("data")),
        "info": {k: v for k, v in info.items() if k not in ("grade", "submission", "arena_rewrites")},
        "model_calls": len(calls),
    }


def _items(
    nodes: Iterable[Any], records: Sequence[AuditRecord], calls: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The messages in commit order, tool calls with their results, and each rewrite or denial
    where it happened: on the tool result that carries its replacement, else at its time."""
    by_node = {c.get("node"): c for c in calls if isinstance(c.get("node"), int)}
    items: list[dict[str, Any]] = []
    asked: dict[str, tuple[str, float | None]] = {}
    unplaced = list(records)
    for number, node in enumerate(nodes):
        if not isinstance(node, dict):
            continue
        message = _obj(node.get("message")) or node
        role = str(message.get("role") or "?")
        at = _float(node.get("timestamp"))
        item: dict[str, Any] = {"kind": role, "text": _text(message.get("content")), "t": at}
        if role == "assistant":
            item["reasoning"] = _text(message.get("reasoning_content"))
            item["calls"] = [_call(c) for c in _list(message.get("tool_calls")) if isinstance(c, dict)]
            asked.update((c["id"], (c["name"], at)) for c in item["calls"])
            call = by_node.get(number)
            if call is not None:
                item["usage"] = _obj(call.get("usage"))
                span = _obj(call.get("time"))
                item["model"] = {
                    "start": _float(span.get("start")),
                    "end": _float(span.get("end")),
                    "name": str(call.get("model") or ""),
                }
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            name, asked_at = asked.get(call_id, (str(message.get("name") or ""), None))
            item.update(call=name, call_id=call_id, asked=asked_at)
            record = next(
                (r for r in unplaced if r.replacement.strip() and r.replacement.strip() in item["text"]), None
            )
            if record is not None:
                unplaced.remove(record)
                item["rewrite"] = _record(record)
        items.append(item)
    for record in sorted(unplaced, key=lambda r: r.time):
        position = sum(1 for it in items if isinstance(it.get("t"), float) and it["t"] <= record.time)
        items.insert(position, {"kind": "rewrite", "t": record.time, **_record(record)})
    return items


def _timeline(
    timing: Mapping[str, Any],
    calls: Sequence[Mapping[str, Any]],
    items: Sequence[Mapping[str, Any]],
    records: Sequence[AuditRecord],
) -> list[dict[str, Any]]:
    """Spans (epoch seconds) to draw on one time axis: the phases, each model call, each tool
    call (from the assistant's message to its result), and each denial or rewrite of the gate."""
    spans = [{"lane": "phase", "label": p["phase"], "start": p["start"], "end": p["end"]} for p in _phases(timing)]
    for call in calls:
        span = _obj(call.get("time"))
        start, end = _float(span.get("start")), _float(span.get("end"))
        if start is not None and end is not None:
            spans.append({"lane": "model", "label": str(call.get("model") or "model"), "start": start, "end": end})
    for item in items:
        if item["kind"] == "tool" and item.get("asked") is not None and item.get("t") is not None:
            spans.append({"lane": "tool", "label": item["call"], "start": item["asked"], "end": item["t"]})
    for record in records:
        spans.append(
            {
                "lane": "gate",
                "label": f"{'denied' if record.stage == 'pre' else 'rewritten'}: {record.rule}",
                "start": record.time,
                "end": record.time,
            }
        )
    return spans


def _records(raw: object) -> list[AuditRecord]:
    out = []
    for value in _list(raw):
        try:
            out.append(AuditRecord.model_validate(value))
        except ValidationError:
            continue  # the run's reader has already named a malformed record
    return out


def _record(r: AuditRecord) -> dict[str, Any]:
    return {
        "rule": r.rule,
        "stage": r.stage,
        "denial": r.stage == "pre",
        "tool": r.tool,
        "args": r.arguments,
        "replacement": r.replacement,
        "excerpt": r.original_excerpt,
        "sha256": r.original_sha256,
        "time": r.time,
    }


def _call(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call: its arguments parsed when they are a JSON object (each value then shown as
    itself, not as an escaped string), else kept as the text the model wrote."""
    function = _obj(raw.get("function"))
    arguments = raw.get("arguments", function.get("arguments"))
    parsed: object = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            parsed = None
    return {
        "id": str(raw.get("id") or ""),
        "name": str(raw.get("name") or function.get("name") or ""),
        "args": parsed if isinstance(parsed, dict) else None,
        "text": "" if isinstance(parsed, dict) else arguments if isinstance(arguments, str) else json.dumps(arguments),
    }


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, dict) and p.get("type") == "text" else "[non-text part]"
            for p in content
        )
    return json.dumps(content, ensure_ascii=False)


def _phases(timing: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in PHASES:
        span = _obj(timing.get(name))
        start, end = _float(span.get("start")), _float(span.get("end"))
        if start is None or not end:
            continue
        phase: dict[str, Any] = {"phase": name, "start": start, "end": end, "seconds": round(max(0.0, end - start), 3)}
        for part in ("model", "harness"):
            duration = _float(_obj(span.get(part)).get("duration"))
            if duration is not None:
                phase[part] = round(duration, 3)
        out.append(phase)
    return out


def _obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (a trace written by another version)."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
