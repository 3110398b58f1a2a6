"""A streamed chat completion assembled and dumped as the openai SDK and verifiers' loop do."""

from __future__ import annotations

import http.client
import json
from typing import Any

from arena_kit.harnesses.arena_bash.program.wire import TransportError, sse_data

# The openai SDK dumps a streamed message and its tool calls in model-field order, extras after.
MESSAGE_FIELDS = ("content", "refusal", "role", "annotations", "audio", "function_call", "tool_calls")
TOOL_CALL_FIELDS = ("id", "function", "type")
FUNCTION_FIELDS = ("arguments", "name")


def _accumulate(acc: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The openai SDK's `accumulate_delta`: strings concatenate, dicts merge, lists merge by index."""
    for key, value in delta.items():
        if key not in acc or acc[key] is None:
            acc[key] = value
            continue
        current = acc[key]
        if key in ("index", "type"):
            acc[key] = value
        elif isinstance(current, str) and isinstance(value, str):
            acc[key] = current + value
        elif isinstance(current, (int, float)) and isinstance(value, (int, float)):
            acc[key] = current + value
        elif isinstance(current, dict) and isinstance(value, dict):
            acc[key] = _accumulate(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            if all(isinstance(x, (str, int, float)) for x in current):
                current.extend(value)
                continue
            for entry in value:
                index = entry["index"]
                if index < len(current):
                    current[index] = _accumulate(current[index], entry)
                else:
                    current.append(entry)
    return acc


def _accumulate_reasoning(acc: dict[str, Any], delta: dict[str, Any]) -> None:
    """verifiers' `_accumulate_streamed_message`: role and reasoning fields the SDK would mangle."""
    if role := delta.get("role"):
        acc["role"] = role
    for field_name in ("reasoning", "reasoning_content"):
        if value := delta.get(field_name):
            acc[field_name] = acc.get(field_name, "") + value
    details = acc.setdefault("reasoning_details", []) if delta.get("reasoning_details") else None
    for detail in delta.get("reasoning_details") or []:
        previous = details[-1] if details else {}
        detail_type = detail.get("type")
        content_field = {"reasoning.summary": "summary", "reasoning.text": "text"}.get(detail_type)
        if (
            content_field
            and detail_type == previous.get("type")
            and all(
                previous.get(f) is None or detail.get(f) is None or previous[f] == detail[f]
                for f in ("id", "index", "format")
            )
        ):
            previous[content_field] = (previous.get(content_field) or "") + (detail.get(content_field) or "")
            for f in ("id", "index", "signature", "format"):
                if previous.get(f) is None and detail.get(f) is not None:
                    previous[f] = detail[f]
        else:
            details.append(dict(detail))  # type: ignore[union-attr]


def _ordered(value: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """`value` without None entries, model fields first (as the SDK's `model_dump(exclude_none=True)`)."""
    out = {key: value[key] for key in fields if value.get(key) is not None}
    out.update((key, item) for key, item in value.items() if key not in fields and item is not None)
    return out


def dump_message(message: dict[str, Any]) -> dict[str, Any]:
    out = _ordered(message, MESSAGE_FIELDS)
    if "tool_calls" in out:
        calls = []
        for call in out["tool_calls"]:
            call = _ordered(call, TOOL_CALL_FIELDS)
            if isinstance(call.get("function"), dict):
                call["function"] = _ordered(call["function"], FUNCTION_FIELDS)
            calls.append(call)
        out["tool_calls"] = calls
    return out


def read_stream(response: http.client.HTTPResponse) -> dict[str, Any]:
    """Assemble an SSE chat stream into `{"choices": [{"message", "finish_reason"}], "usage"}`."""
    choices: dict[int, dict[str, Any]] = {}
    overrides: dict[int, dict[str, Any]] = {}
    usage = None
    seen = False
    try:
        for data in sse_data(response):
            if data.startswith("[DONE]"):
                break
            chunk = json.loads(data)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise RuntimeError(f"model stream error: {chunk['error']}")
            seen = True
            if chunk.get("usage") is not None:
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                index = choice.get("index", 0)
                snapshot = choices.setdefault(index, {"message": {}, "finish_reason": None})
                delta = {k: v for k, v in (choice.get("delta") or {}).items()}
                _accumulate(snapshot["message"], json.loads(json.dumps(delta)))
                if choice.get("finish_reason") is not None:
                    snapshot["finish_reason"] = choice["finish_reason"]
                if any(delta.get(f) for f in ("role", "reasoning", "reasoning_content", "reasoning_details")):
                    _accumulate_reasoning(overrides.setdefault(index, {}), delta)
    except (OSError, http.client.HTTPException) as error:
        raise TransportError(f"model stream broke: {error}") from error
    finally:
        response.close()
    if not seen or not choices or any(c["finish_reason"] is None for c in choices.values()):
        raise TransportError("Model stream ended before a completion finished")
    ordered = [choices[i] for i in sorted(choices)]
    for index, choice in zip(sorted(choices), ordered):
        extra = overrides.setdefault(index, {})
        extra.setdefault("role", "assistant")
        choice["message"].update(extra)
    return {"choices": ordered, "usage": usage}
