"""Anthropic Messages (the `claude_code` harness): parse requests, render replies.

Claude Code (2.1.332) defers tools, MCP ones included: it names them in text and sends no schema
until a `ToolSearch` call with `select:<name>` loads them. Deferred tools are offered to the policy
like any other; calling one first emits that load, which is hidden from the policy's steps, so
`CallTool("search_logs")` works unchanged. It also sends `role: "system"` messages mid-list.
"""

from __future__ import annotations

import re

from arena.dialects.base import (
    Call,
    History,
    Parsed,
    Reply,
    RequestError,
    Target,
    as_dict,
    make_id,
    pieces,
    require,
    sse,
    text_of,
)
from arena_kit.policy import CallTool, Observation, Step, ToolSpec

__all__ = ["AnthropicDialect"]

# Claude Code's own shell tool first; a plain custom `bash` tool as the fallback.
SHELL_TOOLS = ("Bash", "bash")
TOOL_SEARCH = "ToolSearch"
# Claude Code's listing of deferred tools: a header line, then one name per line.
_DEFERRED = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[\w.\-]+\n)*[\w.\-]+)")
_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
}


class AnthropicDialect:
    """`POST /v1/messages` (and the token count side route)."""

    name = "anthropic"

    def parse(self, body: dict, seed: str, input_tokens: int) -> Parsed:
        model = require(body, "model", str, "a string")
        messages = require(body, "messages", list, "an array")
        raw_system = require(body, "system", (str, list), "a string or an array", optional=True)
        stream = bool(require(body, "stream", bool, "a boolean", optional=True))
        system = [text_of(raw_system)]
        prompt: list[str] = []
        seen: list[str] = []  # every user-side text, searched for deferred tool listings
        last_user = ""
        answered = False
        history = History(shell_tools=SHELL_TOOLS)
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, dict):
                raise RequestError(400, f"{where}: expected an object", param=where)
            role, content = message.get("role"), message.get("content")
            if role not in ("user", "assistant", "system"):
                raise RequestError(400, f"{where}.role: expected user, assistant or system", param=f"{where}.role")
            if not isinstance(content, (str, list)):
                raise RequestError(400, f"{where}.content: expected a string or an array", param=f"{where}.content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if role == "system":  # Claude Code 2.1.332 sends its environment block as a system message
                system.append(text_of(blocks))
                continue
            if role == "assistant":
                answered = True
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        arguments = as_dict(block.get("input"))
                        history.call(str(block.get("id", "")), str(block.get("name", "")), arguments)
                continue
            texts = [b for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            for block in results:
                history.result(str(block.get("tool_use_id", "")), text_of(block.get("content")))
            seen.extend(text_of(b) for b in texts)
            if not texts or results:
                continue  # text riding along with tool results (reminders) is not a user turn
            if not answered:
                prompt.append(text_of(texts))
            said = [b for b in texts if not str(b.get("text", "")).lstrip().startswith("<system-reminder>")]
            last_user = text_of(said) or last_user
        specs, targets = _tools(require(body, "tools", list, "an array", optional=True) or [])
        specs, targets = _with_deferred(specs, targets, [*system, *seen])
        observation = Observation(
            model=model,
            system="\n\n".join(s for s in system if s),
            prompt="\n\n".join(p for p in prompt if p),
            tools=specs,
            steps=tuple(step for step in history.steps() if not _is_tool_load(step)),
            dialect=self.name,
            last_user=last_user,
        )
        return Parsed(observation, model, stream, seed, input_tokens, targets)

    def shell(self, command: str, parsed: Parsed) -> Call | None:
        if target := parsed.targets.get("Bash"):
            return Call("Bash", target, {"command": command, "description": "run a command"})
        if target := parsed.targets.get("bash"):
            return Call("bash", target, {"command": command})
        return None

    def render(self, reply: Reply, parsed: Parsed) -> dict:
        return {
            **_message(parsed),
            "content": [_block(reply, parsed)],
            "stop_reason": _stop(reply),
            "usage": _usage(reply, parsed),
        }

    def stream(self, reply: Reply, parsed: Parsed) -> list[bytes]:
        block = _block(reply, parsed)
        start = {
            **_message(parsed),
            "content": [],
            "stop_reason": None,
            "usage": {**_usage(reply, parsed), "output_tokens": 1},
        }
        if reply.call:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(reply.arguments_json)]
        else:
            opening = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(reply.text)]
        events: list[tuple[str, dict]] = [
            ("message_start", {"message": start}),
            ("content_block_start", {"index": 0, "content_block": opening}),
            ("ping", {}),
            *(("content_block_delta", {"index": 0, "delta": d}) for d in deltas),
            ("content_block_stop", {"index": 0}),
            (
                "message_delta",
                {
                    "delta": {"stop_reason": _stop(reply), "stop_sequence": None},
                    "usage": {"output_tokens": reply.output_tokens},
                },
            ),
            ("message_stop", {}),
        ]
        return [sse({"type": kind, **data}, kind) for kind, data in events]

    def error_body(self, error: RequestError) -> dict:
        kind = "api_error" if error.status >= 500 else _ERROR_TYPES.get(error.status, "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": error.message}}


def count_tokens(parsed: Parsed) -> dict:
    """The `count_tokens` reply for a parsed request."""
    return {"input_tokens": parsed.input_tokens}


def _tools(raw: list) -> tuple[tuple[ToolSpec, ...], dict[str, Target]]:
    specs: list[ToolSpec] = []
    targets: dict[str, Target] = {}
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise RequestError(400, f"tools.{i}: expected an object", param=f"tools.{i}")
        if tool.get("type") not in (None, "custom"):
            continue  # server tools (web_search_*, bash_*, text_editor_*) are not client tools here
        if not isinstance(tool.get("name"), str):
            raise RequestError(400, f"tools.{i}.name: field required", param=f"tools.{i}.name")
        schema = as_dict(tool.get("input_schema"))
        specs.append(ToolSpec(tool["name"], str(tool.get("description") or ""), schema))
        targets[tool["name"]] = Target(tool["name"], None, schema)
    return tuple(specs), targets


def _with_deferred(
    specs: tuple[ToolSpec, ...], targets: dict[str, Target], texts: list[str]
) -> tuple[tuple[ToolSpec, ...], dict[str, Target]]:
    """Add the tools Claude Code lists as deferred (named in text, schema not sent; MCP tools
    are deferred by default) so policies can call them; the first call loads them via ToolSearch."""
    search = targets.get(TOOL_SEARCH)
    if search is None:
        return specs, targets
    names = [n for text in texts for m in _DEFERRED.finditer(text) for n in m.group(1).split("\n")]
    extra = {n: None for n in names if n and n not in targets}
    added = tuple(ToolSpec(n, "(deferred: loaded through ToolSearch on first call)", {}) for n in extra)
    loaded = {n: Target(n, loader=Call(TOOL_SEARCH, search, {"query": f"select:{n}"})) for n in extra}
    return specs + added, {**targets, **loaded}


def _is_tool_load(step: Step) -> bool:
    """A ToolSearch `select:` call: how the server loads deferred tools, hidden from the policy."""
    action = step.action
    return (
        isinstance(action, CallTool)
        and action.name == TOOL_SEARCH
        and str(action.arguments.get("query", "")).startswith("select:")
    )


def _message(parsed: Parsed) -> dict:
    return {
        "id": make_id("msg_", parsed.seed),
        "type": "message",
        "role": "assistant",
        "model": parsed.model,
        "stop_sequence": None,
    }


def _block(reply: Reply, parsed: Parsed) -> dict:
    if reply.call is None:
        return {"type": "text", "text": reply.text}
    return {
        "type": "tool_use",
        "id": make_id("toolu_", parsed.seed, 1),
        "name": reply.call.target.wire_name,
        "input": reply.call.arguments,
    }


def _stop(reply: Reply) -> str:
    return "tool_use" if reply.call else "end_turn"


def _usage(reply: Reply, parsed: Parsed) -> dict:
    return {
        "input_tokens": parsed.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }
