"""What the three wire dialects share: the parsed request, the planned reply, errors, ids, tokens.

A dialect parses a request body into a `Parsed` (the policy's `Observation` plus what rendering
needs), and renders a `Reply`. `plan` turns the policy's `Action` into that `Reply` in one place,
so every dialect maps tool names and degrades to text the same way: a tool action the request
cannot carry (tool not offered, or no tools at all) becomes a short text answer, never an error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from arena.errors import RequestError
from arena_kit.policy import Action, Answer, CallTool, Observation, RunShell, Step, tool_matches

__all__ = [
    "Call",
    "History",
    "Parsed",
    "Reply",
    "RequestError",
    "Target",
    "as_dict",
    "estimate_tokens",
    "make_id",
    "openai_error",
    "parse_arguments",
    "pieces",
    "plan",
    "require",
    "shell_command",
    "sse",
    "text_of",
]


@dataclass(frozen=True)
class Target:
    """How to call one offered tool on the wire: its wire name, Responses namespace, schema."""

    wire_name: str
    namespace: str | None = None
    parameters: dict = field(default_factory=dict)
    loader: Call | None = None
    """For a tool the harness has listed but not loaded (Claude Code's deferred tools): the call
    that loads it. A call to this tool is rendered as the loader call instead."""


@dataclass(frozen=True)
class Parsed:
    """One parsed request: the policy's view plus what the renderer needs."""

    observation: Observation
    model: str
    stream: bool
    seed: str
    """A digest of the request body: response ids derive from it, so replays get equal ids."""
    input_tokens: int
    targets: dict[str, Target]
    """Offered tool name (as in `observation.tools`) -> how to call it."""
    options: dict[str, Any] = field(default_factory=dict)
    """Dialect-specific echo-backs (e.g. chat `stream_options.include_usage`)."""


@dataclass(frozen=True)
class Call:
    """A concrete tool call to emit."""

    name: str
    """The name as offered (what the policy sees)."""
    target: Target
    arguments: dict


@dataclass(frozen=True)
class Reply:
    """The rendered turn: exactly one of a text answer or one tool call."""

    text: str = ""
    call: Call | None = None

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.call.arguments) if self.call else ""

    @property
    def output_tokens(self) -> int:
        return estimate_tokens(self.text + (self.call.name + self.arguments_json if self.call else ""))

    def summary(self) -> str:
        """A short description for the request log line."""
        if self.call is None:
            return f"answer({len(self.text)} chars)"
        return f"call {self.call.name} {_clip(self.arguments_json, 120)}"


ShellMapper = Callable[[str, Parsed], Call | None]
"""A dialect's mapping of `RunShell(command)` onto its shell tool; None when none is offered."""


def plan(action: Action, parsed: Parsed, shell: ShellMapper) -> Reply:
    """Turn a policy action into the reply this request can carry."""
    if isinstance(action, Answer):
        return Reply(text=action.text)
    if isinstance(action, RunShell):
        call = shell(action.command, parsed) if parsed.targets else None
        if call is None:
            return Reply(text=f"I wanted to run a shell command, but no shell tool is offered here: {action.command}")
        return Reply(call=call)
    if isinstance(action, CallTool):
        name = _pick(action.name, parsed.targets)
        if name is None:
            return Reply(text=f"I wanted to call the tool `{action.name}`, but it is not offered here.")
        target = parsed.targets[name]
        if target.loader is not None:
            return Reply(call=target.loader)
        return Reply(call=Call(name=name, target=target, arguments=dict(action.arguments)))
    raise TypeError(f"policy returned {type(action).__name__}, not CallTool, RunShell or Answer")


def _pick(name: str, targets: dict[str, Target]) -> str | None:
    if name in targets:
        return name
    return next((offered for offered in targets if tool_matches(offered, name)), None)


def unwrap_mcp_result(text: str) -> str:
    """The text an MCP tool returned. claude and codex hand a string-returning MCP tool's result on
    as the structured `{"result": "<text>"}`; the bash harness passes the text itself. Policies
    see the text in every harness."""
    if not text.startswith('{"result"'):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and list(value) == ["result"] and isinstance(value["result"], str):
        return value["result"]
    return text


class History:
    """Collects what a request shows the model into an `Observation`: system text, the prompt (user
    text before the first assistant turn), the latest user text, and the tool calls with their
    results (matched by call id) as `Step`s."""

    def __init__(self, shell_tools: Iterable[str], system: Iterable[str] = ()):
        self._shell = frozenset(shell_tools)
        self._calls: list[tuple[str, CallTool | RunShell]] = []
        self._results: dict[str, str] = {}
        self.system: list[str] = [s for s in system if s]
        self.prompt: list[str] = []
        self.last_user = ""
        self.answered = False

    def message(self, role: str, content: Any, where: str) -> None:
        """A chat-style message of a known role (validate roles before calling)."""
        if content is not None and not isinstance(content, (str, list)):
            raise RequestError(400, f"{where}.content: expected a string or an array", param=f"{where}.content")
        if role in ("system", "developer"):
            self.system.append(text_of(content))
        elif role == "user":
            self.user(text_of(content))
        elif role == "assistant":
            self.answered = True

    def user(self, text: str) -> None:
        self.last_user = text
        if not self.answered:
            self.prompt.append(text)

    def call(self, call_id: str, name: str, arguments: dict) -> None:
        self.answered = True
        command = shell_command(arguments) if name in self._shell else None
        action: CallTool | RunShell = RunShell(command) if command is not None else CallTool(name, arguments)
        self._calls.append((call_id, action))

    def shell(self, call_id: str, command: str) -> None:
        self.answered = True
        self._calls.append((call_id, RunShell(command)))

    def result(self, call_id: str, text: str) -> None:
        self._results[call_id] = unwrap_mcp_result(text)

    def steps(self) -> tuple[Step, ...]:
        return tuple(Step(action, self._results.get(call_id)) for call_id, action in self._calls)

    def observation(self, model: str, tools: tuple, dialect: str) -> Observation:
        return Observation(
            model=model,
            system="\n\n".join(s for s in self.system if s),
            prompt="\n\n".join(p for p in self.prompt if p),
            tools=tools,
            steps=self.steps(),
            dialect=dialect,
            last_user=self.last_user,
        )


def sse(data: dict, event: str | None = None) -> bytes:
    """One server-sent event; `event:` line first when the dialect names its events."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def shell_command(arguments: dict) -> str | None:
    """The command line of a shell tool call's arguments (`command`/`cmd`, string or argv)."""
    value = arguments.get("command", arguments.get("cmd"))
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[0] in ("bash", "sh", "zsh") and value[1] in ("-lc", "-c"):
            return value[2]
        return " ".join(value)
    return None


def text_of(content: Any, kinds: Iterable[str] = ("text", "input_text", "output_text")) -> str:
    """Flatten a content value (a string, or a list of text blocks / strings) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        wanted = tuple(kinds)
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type", "text") in wanted and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return json.dumps(content)


def make_id(prefix: str, seed: str, index: int = 0, length: int = 24) -> str:
    """A deterministic id: `prefix` + hex digest of the request seed and an index."""
    return prefix + hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:length]


def pieces(text: str, size: int = 48) -> list[str]:
    """Split streamed text into deltas so clients really accumulate (never zero pieces)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def estimate_tokens(text: str) -> int:
    """The server's token estimate: a quarter of the character count, at least 1."""
    return max(1, len(text) // 4)


def openai_error(error: RequestError) -> dict:
    """The OpenAI error body (chat completions and Responses)."""
    kind = "server_error" if error.status >= 500 else "invalid_request_error"
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}}


def as_dict(value: Any) -> dict:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def parse_arguments(raw: Any) -> dict:
    """A tool call's arguments as a dict: JSON strings are decoded; anything else is wrapped."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": raw}
    return {} if raw is None else {"_raw": raw}


def require(body: Any, key: str, kind: type | tuple[type, ...], what: str, *, optional: bool = False) -> Any:
    """`body[key]` checked against `kind`, or a 400 naming the parameter."""
    if not isinstance(body, dict):
        raise RequestError(400, "request body must be a JSON object")
    if key not in body or body[key] is None:
        if optional:
            return None
        raise RequestError(400, f"{key}: field required", param=key, code="missing_required_parameter")
    value = body[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise RequestError(400, f"{key}: expected {what}, got boolean", param=key, code="invalid_type")
    if not isinstance(value, kind):
        raise RequestError(400, f"{key}: expected {what}, got {type(value).__name__}", param=key, code="invalid_type")
    return value


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
