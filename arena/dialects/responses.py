"""OpenAI Responses (the `codex` harness): parse requests, render replies.

Tools may arrive flat (`{"type": "function", "name": …}`) or grouped in a namespace
(`{"type": "namespace", "name": "mcp__srv__", "tools": [...]}`, how codex offers MCP tools). A
namespaced tool is shown to the policy under its full name (namespace + name, with `__` between
unless the namespace already ends in `_`), and called back with `name` and `namespace` split.
Codex's framing of tool output ("Chunk ID: …", "Wall time: …", "Output:") is stripped from results.
"""

from __future__ import annotations

import re
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
    shell_command,
    sse,
    text_of,
)
from arena_kit.policy import ToolSpec

__all__ = ["ResponsesDialect", "full_name"]

# Codex's shell tools, most preferred first.
SHELL_TOOLS = ("exec_command", "shell_command", "shell")
# Codex frames tool output with a metadata header ending in "Output:"; policies see the output only.
_CODEX_FRAME = re.compile(
    r"\A(?:(?:Chunk ID|Wall time|Process exited with code|Process running with session ID"
    r"|Original token count|Total output lines)\b[^\n]*\n)+Output:\n"
)
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_ASSISTANT_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "reasoning")


def full_name(namespace: str | None, name: str) -> str:
    if not namespace:
        return name
    return namespace + name if namespace.endswith("_") else f"{namespace}__{name}"


class ResponsesDialect:
    """`POST /v1/responses`."""

    name = "responses"

    def parse(self, body: dict, seed: str, input_tokens: int) -> Parsed:
        model = require(body, "model", str, "a string")
        raw_input = require(body, "input", (str, list), "a string or an array")
        instructions = require(body, "instructions", str, "a string", optional=True)
        stream = bool(require(body, "stream", bool, "a boolean", optional=True))
        history = History(shell_tools=SHELL_TOOLS, system=[instructions] if instructions else [])
        items = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else raw_input
        for i, item in enumerate(items):
            where = f"input[{i}]"
            if not isinstance(item, dict):
                raise RequestError(400, f"{where}: expected an object", param=where, code="invalid_type")
            kind = item.get("type") or ("message" if "role" in item else None)
            call_id = str(item.get("call_id", ""))
            if kind == "message":
                role = item.get("role")
                if role not in ("user", "assistant", "system", "developer"):
                    raise RequestError(
                        400,
                        f"{where}.role: expected user, assistant, system or developer",
                        param=f"{where}.role",
                    )
                history.message(role, item.get("content"), where)
            elif kind in _ASSISTANT_ITEMS:
                history.answered = True
                if kind == "function_call":
                    name = item.get("name")
                    if not isinstance(name, str):
                        raise RequestError(400, f"{where}.name: expected a string", param=f"{where}.name")
                    history.call(
                        call_id,
                        full_name(item.get("namespace"), name),
                        parse_arguments(item.get("arguments")),
                    )
                elif kind == "custom_tool_call":
                    history.call(call_id, str(item.get("name", "")), {"input": item.get("input")})
                elif kind == "local_shell_call":
                    action = as_dict(item.get("action"))
                    history.shell(call_id, shell_command(action) or "")
            elif kind in _OUTPUT_ITEMS:
                history.result(call_id, _CODEX_FRAME.sub("", text_of(item.get("output")), count=1))
        specs, targets = _tools(require(body, "tools", list, "an array", optional=True) or [])
        observation = history.observation(model, specs, self.name)
        return Parsed(observation, model, stream, seed, input_tokens, targets)

    def shell(self, command: str, parsed: Parsed) -> Call | None:
        for name in SHELL_TOOLS:
            target = parsed.targets.get(name)
            if target is None:
                continue
            if name == "exec_command":
                return Call(name, target, {"cmd": command})
            command_schema = (target.parameters.get("properties") or {}).get("command") or {}
            if command_schema.get("type") == "string":
                return Call(name, target, {"command": command})
            return Call(name, target, {"command": ["bash", "-lc", command]})
        return None

    def render(self, reply: Reply, parsed: Parsed) -> dict:
        return _response(parsed, "completed", [_item(reply, parsed)], _usage(reply, parsed))

    def stream(self, reply: Reply, parsed: Parsed) -> list[bytes]:
        item = _item(reply, parsed)
        events: list[tuple[str, dict]] = [
            ("response.created", {"response": _response(parsed, "in_progress", [], None)}),
            ("response.in_progress", {"response": _response(parsed, "in_progress", [], None)}),
        ]
        at = {"item_id": item["id"], "output_index": 0}
        if reply.call:
            events.append(
                (
                    "response.output_item.added",
                    {"output_index": 0, "item": {**item, "status": "in_progress", "arguments": ""}},
                )
            )
            events += [
                ("response.function_call_arguments.delta", {**at, "delta": p}) for p in pieces(reply.arguments_json)
            ]
            events.append(("response.function_call_arguments.done", {**at, "arguments": reply.arguments_json}))
        else:
            part = item["content"][0]
            events.append(
                (
                    "response.output_item.added",
                    {"output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
                )
            )
            events.append(("response.content_part.added", {**at, "content_index": 0, "part": {**part, "text": ""}}))
            events += [
                ("response.output_text.delta", {**at, "content_index": 0, "delta": p, "logprobs": []})
                for p in pieces(reply.text)
            ]
            events.append(("response.output_text.done", {**at, "content_index": 0, "text": reply.text, "logprobs": []}))
            events.append(("response.content_part.done", {**at, "content_index": 0, "part": part}))
        events.append(("response.output_item.done", {"output_index": 0, "item": item}))
        events.append(("response.completed", {"response": self.render(reply, parsed)}))
        return [sse({"type": kind, "sequence_number": n, **data}, kind) for n, (kind, data) in enumerate(events)]

    def error_body(self, error: RequestError) -> dict:
        return openai_error(error)


def _tools(raw: list) -> tuple[tuple[ToolSpec, ...], dict[str, Target]]:
    specs: list[ToolSpec] = []
    targets: dict[str, Target] = {}

    def add(tool: dict, where: str, namespace: str | None) -> None:
        if tool.get("type") != "function":
            return  # web_search, custom (freeform) and other non-function tools cannot take an arguments dict
        if not isinstance(tool.get("name"), str):
            raise RequestError(400, f"{where}.name: expected a string", param=f"{where}.name")
        parameters = as_dict(tool.get("parameters"))
        name = full_name(namespace, tool["name"])
        specs.append(ToolSpec(name, str(tool.get("description") or ""), parameters))
        targets[name] = Target(tool["name"], namespace, parameters)

    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise RequestError(400, f"tools[{i}]: expected an object", param=f"tools[{i}]", code="invalid_type")
        if tool.get("type") == "namespace":
            nested = tool.get("tools")
            if not isinstance(tool.get("name"), str) or not isinstance(nested, list):
                raise RequestError(400, f"tools[{i}]: a namespace needs a name and a tools array", param=f"tools[{i}]")
            for j, inner in enumerate(nested):
                if isinstance(inner, dict):
                    add(inner, f"tools[{i}].tools[{j}]", tool["name"])
        else:
            add(tool, f"tools[{i}]", None)
    return tuple(specs), targets


def _item(reply: Reply, parsed: Parsed) -> dict:
    if reply.call is None:
        part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        return {
            "id": make_id("msg_", parsed.seed),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
    item = {
        "id": make_id("fc_", parsed.seed),
        "type": "function_call",
        "status": "completed",
        "call_id": make_id("call_", parsed.seed, 1),
        "name": reply.call.target.wire_name,
        "arguments": reply.arguments_json,
    }
    if reply.call.target.namespace:
        item["namespace"] = reply.call.target.namespace
    return item


def _response(parsed: Parsed, status: str, output: list[dict], usage: dict | None) -> dict:
    return {
        "id": make_id("resp_", parsed.seed),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": parsed.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _usage(reply: Reply, parsed: Parsed) -> dict:
    return {
        "input_tokens": parsed.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": parsed.input_tokens + reply.output_tokens,
    }
