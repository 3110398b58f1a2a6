"""OpenAI chat completions (the `bash` and `null` harnesses): parse requests, render replies."""

from __future__ import annotations

import time

from arena.dialects.base import (
    Call,
    History,
    Parsed,
    Reply,
    RequestError,
    Target,
    as_dict,
    make_id,
    openai_error,
    parse_arguments,
    pieces,
    require,
    sse,
    text_of,
)
from arena_kit.policy import ToolSpec

__all__ = ["ChatDialect"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class ChatDialect:
    """`POST /v1/chat/completions`."""

    name = "chat"

    def parse(self, body: dict, seed: str, input_tokens: int) -> Parsed:
        model = require(body, "model", str, "a string")
        messages = require(body, "messages", list, "an array")
        stream = bool(require(body, "stream", bool, "a boolean", optional=True))
        stream_options = require(body, "stream_options", dict, "an object", optional=True) or {}
        history = History(shell_tools=("bash",))
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, dict):
                raise RequestError(400, f"{where}: expected an object", param=where, code="invalid_type")
            role = message.get("role")
            if role not in _ROLES:
                raise RequestError(400, f"{where}.role: expected one of {', '.join(_ROLES)}", param=f"{where}.role")
            content = message.get("content")
            if role == "tool":
                history.result(str(message.get("tool_call_id", "")), text_of(content))
                continue
            history.message(role, content, where)
            for j, call in enumerate(message.get("tool_calls") or [] if role == "assistant" else []):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                    param = f"{where}.tool_calls[{j}].function"
                    raise RequestError(400, f"{param}: expected an object with a name", param=param)
                history.call(str(call.get("id", "")), function["name"], parse_arguments(function.get("arguments")))
        specs, targets = _tools(require(body, "tools", list, "an array", optional=True) or [])
        observation = history.observation(model, specs, self.name)
        return Parsed(
            observation=observation,
            model=model,
            stream=stream,
            seed=seed,
            input_tokens=input_tokens,
            targets=targets,
            options={"include_usage": bool(stream_options.get("include_usage"))},
        )

    def shell(self, command: str, parsed: Parsed) -> Call | None:
        target = parsed.targets.get("bash")
        return Call("bash", target, {"command": command}) if target else None

    def render(self, reply: Reply, parsed: Parsed) -> dict:
        message: dict = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.call:
            message["tool_calls"] = [_tool_call(reply, parsed)]
        return {
            **_head(parsed, "chat.completion"),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}],
            "usage": _usage(reply, parsed),
        }

    def stream(self, reply: Reply, parsed: Parsed) -> list[bytes]:
        head = _head(parsed, "chat.completion.chunk")

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**head, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": None if reply.call else ""})]
        if reply.call:
            call = _tool_call(reply, parsed)
            opening = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            events.append(chunk({"tool_calls": [{"index": 0, **opening}]}))
            events += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in pieces(reply.arguments_json)
            ]
        else:
            events += [chunk({"content": piece}) for piece in pieces(reply.text)]
        events.append(chunk({}, _finish(reply)))
        if parsed.options.get("include_usage"):
            events.append(sse({**head, "choices": [], "usage": _usage(reply, parsed)}))
        events.append(b"data: [DONE]\n\n")
        return events

    def error_body(self, error: RequestError) -> dict:
        return openai_error(error)


def _tools(raw: list) -> tuple[tuple[ToolSpec, ...], dict[str, Target]]:
    specs: list[ToolSpec] = []
    targets: dict[str, Target] = {}
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise RequestError(400, f"tools[{i}]: expected an object", param=f"tools[{i}]", code="invalid_type")
        if tool.get("type", "function") != "function":
            continue
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise RequestError(
                400, f"tools[{i}].function: expected an object with a name", param=f"tools[{i}].function"
            )
        parameters = as_dict(function.get("parameters"))
        specs.append(ToolSpec(function["name"], str(function.get("description") or ""), parameters))
        targets[function["name"]] = Target(function["name"], None, parameters)
    return tuple(specs), targets


def _head(parsed: Parsed, kind: str) -> dict:
    return {
        "id": make_id("chatcmpl-", parsed.seed),
        "object": kind,
        "created": int(time.time()),
        "model": parsed.model,
        "system_fingerprint": None,
    }


def _tool_call(reply: Reply, parsed: Parsed) -> dict:
    assert reply.call is not None
    return {
        "id": make_id("call_", parsed.seed, 1),
        "type": "function",
        "function": {"name": reply.call.target.wire_name, "arguments": reply.arguments_json},
    }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.call else "stop"


def _usage(reply: Reply, parsed: Parsed) -> dict:
    output = reply.output_tokens
    return {
        "prompt_tokens": parsed.input_tokens,
        "completion_tokens": output,
        "total_tokens": parsed.input_tokens + output,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
