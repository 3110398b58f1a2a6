"""Claude Code behind the ACP calls of Arena's runner: what claude-agent-acp does for verifiers' claude_code
harness, spoken straight to the `claude` binary over its stream-json control protocol, without the adapter's node.

verifiers' claude_code harness runs `node claude-agent-acp`, which starts `claude` (`CLAUDE_CODE_EXECUTABLE`)
through the Claude Agent SDK and translates between ACP and Claude Code's stream-json. The adapter alone costs
about 0.45 CPU-s a rollout. `ClaudeStreamAgent` answers the runner's ACP requests itself and starts `claude`
with the argv, env and `initialize` the adapter gives it (read from claude-agent-acp `ADAPTER_VERSION`, SDK
`SDK_VERSION`, claude `CLAUDE_VERSION`): the same permission answers for the tool gate, `{"continue": true}`
for the adapter's hooks, the visible reply grouped by API message id as the adapter's `messageId`, its stop
reasons and its error text. `speaks_for` takes a rollout only when its config and settings are ones this was
read against; any other runs the adapter (`tests/kit/harnesses/acp_runner` holds both to one transcript).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from contextlib import suppress
from collections.abc import Callable
from typing import Any, Protocol

CLAUDE_VERSION = "2.1.278"
ADAPTER_VERSION = "0.79.0"
SDK_VERSION = "0.3.274"
"""The Claude Agent SDK release claude-agent-acp `ADAPTER_VERSION` starts Claude Code with."""
ADAPTER = re.compile(
    r"/vf-claude-agent-acp-(?P<claude>[^/]+)-(?P<adapter>[^/-]+)/packages/node_modules/\.bin/claude-agent-acp"
)
HOOKS = ("PostToolUse", "PostModelSwitch", "PostCompact", "TaskCreated", "TaskCompleted")
"""The hooks the adapter registers, in its order; each answers `{"continue": true}`."""
SESSION_OPTIONS = frozenset({"strictMcpConfig", "disallowedTools", "extraArgs"})
"""The `_meta.claudeCode.options` verifiers' harness sets; a session with any other runs the adapter."""
ADAPTER_ENV = ("MAX_THINKING_TOKENS", "CLAUDE_MODEL_CONFIG", "DEBUG_CLAUDE_AGENT_SDK", "CLAUDE_CODE_ENTRYPOINT")
"""Variables the adapter or the SDK turns into argv or settings; with any set, the adapter runs."""
REFUSED = "User refused permission to run tool"
CLOSE_GRACES_S = (2.0, 5.0)
"""The SDK's close: after stdin ends, `claude` gets 2 s before SIGTERM, then 5 s before SIGKILL."""
MAX_LINE_BYTES = 128 * 1024 * 1024


class Client(Protocol):
    """What the runner's session gives an agent: its updates and its permission asks."""

    def session_update(self, params: dict[str, Any]) -> None: ...

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]: ...


class RequestError(Exception):
    """A JSON-RPC error as the adapter would answer it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


def _settings_default_mode(cwd: str, env: dict[str, str]) -> bool:
    """Whether any settings file the adapter reads sets a default permission mode (or cannot be read)."""
    config_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", ""), ".claude")
    for path in (
        os.path.join(cwd, config_dir, "settings.json"),
        os.path.join(cwd, ".claude", "settings.json"),
        os.path.join(cwd, ".claude", "settings.local.json"),
        "/etc/claude-code/managed-settings.json",
    ):
        try:
            with open(path, encoding="utf-8") as file:
                settings = json.load(file)
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return True
        if not isinstance(settings, dict) or "defaultMode" in (settings.get("permissions") or {}):
            return True
    return False


def speaks_for(config: dict[str, Any], env: dict[str, str], cwd: str) -> bool:
    """Whether this rollout's agent is the adapter release, at the Claude Code release, this was read against,
    started by verifiers' claude_code harness with nothing this does not reproduce."""
    command = config.get("command") or []
    found = ADAPTER.search(command[-1]) if len(command) == 2 else None
    meta = config.get("session_meta") or {}
    options = (meta.get("claudeCode") or {}).get("options") or {}
    system_prompt = meta.get("systemPrompt")
    return (
        found is not None
        and (found["claude"], found["adapter"]) == (CLAUDE_VERSION, ADAPTER_VERSION)
        and bool(env.get("CLAUDE_CODE_EXECUTABLE"))
        and not config.get("client_capabilities")
        and set(meta) <= {"claudeCode", "systemPrompt"}
        and set(meta.get("claudeCode") or {}) <= {"options"}
        and set(options) <= SESSION_OPTIONS
        and set(options.get("extraArgs") or {}) <= {"name"}
        and (system_prompt is None or (isinstance(system_prompt, dict) and set(system_prompt) <= {"append"}))
        and not any(name in env for name in ADAPTER_ENV)
        and not _settings_default_mode(cwd, env)
    )


def claude_argv(
    executable: str, session_id: str, mcp_servers: list[dict[str, Any]], options: dict[str, Any]
) -> list[str]:
    """The argv the SDK gives `claude` for the adapter's session (its order, its flags)."""
    servers = {
        server["name"]: {
            "type": server["type"],
            "url": server["url"],
            "headers": {h["name"]: h["value"] for h in server.get("headers") or []},
        }
        for server in mcp_servers
    }
    argv = [
        executable,
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--disallowedTools",
        ",".join([*(options.get("disallowedTools") or []), "AskUserQuestion"]),
        "--tools",
        "default",
    ]
    if servers:
        argv += ["--mcp-config", json.dumps({"mcpServers": servers}, separators=(",", ":"), ensure_ascii=False)]
    argv.append("--setting-sources=user,project,local")
    if options.get("strictMcpConfig"):
        argv.append("--strict-mcp-config")
    argv += [
        "--permission-mode",
        "default",
        "--allow-dangerously-skip-permissions",
        "--include-partial-messages",
        f"--session-id={session_id}",
    ]
    for name, value in {**(options.get("extraArgs") or {}), "replay-user-messages": ""}.items():
        text = (
            "" if value is None else str(value)
        )  # the SDK's own spelling: `--flag value`, or `--flag=value` for a dash
        argv += (
            [f"--{name}"]
            if value is None
            else ([f"--{name}={text}"] if len(text) > 1 and text.startswith("-") else [f"--{name}", text])
        )
    return argv


def claude_env(env: dict[str, str]) -> dict[str, str]:
    """The adapter's env for `claude`: the runner's, with what the adapter and the SDK add and remove."""
    out = {k: v for k, v in env.items() if k not in ("NODE_OPTIONS", "DEBUG")}
    return {
        **out,
        "NoDefaultCurrentDirectoryInExePath": "1",
        "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS": "1",
        "CLAUDE_CODE_ENTRYPOINT": "sdk-ts",
        "CLAUDE_AGENT_SDK_VERSION": SDK_VERSION,
    }


def user_content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ACP prompt blocks as a Claude user message's content (the adapter's `promptToClaude` for text and images)."""
    content: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "text":
            text, found = block["text"], re.match(r"^/mcp:([^:\s]+):(\S+)(?:\s(.*))?$", block["text"], re.S)
            if found:
                text = f"/{found[1]}:{found[2]} (MCP){' ' + found[3] if found[3] else ''}"
            content.append({"type": "text", "text": text})
        elif block["type"] == "image" and block.get("data"):
            content.append(
                {"type": "image", "source": {"type": "base64", "data": block["data"], "media_type": block["mimeType"]}}
            )
    return content


def permission_options(tool_name: str) -> list[dict[str, str]]:
    """The options the adapter offers that the runner can pick: its first allow_once and its reject_once."""
    allow = (
        {"optionId": "exit-plan-default", "name": "Yes, manually approve edits", "kind": "allow_once"}
        if tool_name == "ExitPlanMode"
        else {"optionId": "allow-once", "name": "Yes", "kind": "allow_once"}
    )
    return [
        allow,
        {
            "optionId": "reject",
            "name": "No, keep planning" if tool_name == "ExitPlanMode" else "No",
            "kind": "reject_once",
        },
    ]


def permission_result(tool_name: str, tool_input: Any, tool_use_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """The adapter's answer to `can_use_tool` for the runner's choice; a cancelled ask raises as the adapter's does."""
    chosen = outcome.get("outcome") or {}
    if chosen.get("outcome") != "selected":
        raise RuntimeError("Tool use aborted")
    option = chosen.get("optionId")
    if option == "allow-once":
        return {
            "behavior": "allow",
            "updatedInput": tool_input,
            "toolUseID": tool_use_id,
            "decisionClassification": "user_temporary",
        }
    if option == "exit-plan-default":
        return {
            "behavior": "allow",
            "updatedInput": tool_input,
            "updatedPermissions": [{"type": "setMode", "mode": "default", "destination": "session"}],
            "toolUseID": tool_use_id,
            "decisionClassification": "user_temporary",
        }
    if option == "reject":
        if tool_name == "ExitPlanMode":
            return {
                "behavior": "deny",
                "message": "User chose to keep planning",
                "interrupt": True,
                "toolUseID": tool_use_id,
                "decisionClassification": "user_reject",
            }
        return {
            "behavior": "deny",
            "message": REFUSED,
            "toolUseID": tool_use_id,
            "decisionClassification": "user_reject",
        }
    raise RuntimeError(f"Permission option was not offered: {option}")


async def read_objects(stream: asyncio.StreamReader, dispatch: Callable[[dict[str, Any]], None]) -> None:
    """Each newline-delimited JSON object on `stream` to `dispatch`, until EOF (lines that are not one are skipped)."""
    while line := await stream.readline():
        with suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict):
                dispatch(message)


class Turn:
    """One prompt in flight: its user message ids, the steers whose echo is pending, its reply's bookkeeping."""

    def __init__(self, message_id: str) -> None:
        self.messages = {message_id}
        self.steered: set[str] = set()
        self.done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.delivered_text = False
        self.last_error: str | None = None


class ClaudeStreamAgent:
    """The runner's ACP agent, as claude-agent-acp answers it, over one `claude` process per session."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.process: asyncio.subprocess.Process | None = None
        self.session_id = str(uuid.uuid4())
        self.turn: Turn | None = None
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.answering: dict[str, asyncio.Task[None]] = {}
        self.reader: asyncio.Task[None] | None = None

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "promptCapabilities": {"image": True, "embeddedContext": True},
                    "mcpCapabilities": {"http": True, "sse": True},
                },
                "_meta": {"steering": {"supported": True}},
            }
        if method == "session/new":
            await self._start(params)
            return {"sessionId": self.session_id}
        if method == "session/prompt":
            return await self._prompt(params["prompt"])
        if method == "_session/steering":
            return self._steer(params)
        raise RequestError(-32601, "Method not found", {"method": method})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel" and self.turn is not None:
            turn, self.turn = self.turn, None
            if not turn.done.done():
                turn.done.set_result({"stopReason": "cancelled"})
            self._control({"subtype": "interrupt"})

    async def _start(self, params: dict[str, Any]) -> None:
        meta = params.get("_meta") or {}
        options = (meta.get("claudeCode") or {}).get("options") or {}
        env = claude_env(dict(os.environ))
        argv = claude_argv(env["CLAUDE_CODE_EXECUTABLE"], self.session_id, params.get("mcpServers") or [], options)
        self.process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=params["cwd"],
            limit=MAX_LINE_BYTES,
        )
        self.reader = asyncio.create_task(self._receive())
        initialize: dict[str, Any] = {
            "subtype": "initialize",
            "hooks": {name: [{"hookCallbackIds": [f"hook_{i}"]}] for i, name in enumerate(HOOKS)},
        }
        append = (meta.get("systemPrompt") or {}).get("append")
        if append is not None:
            initialize["appendSystemPrompt"] = append
        initialize["forwardSubagentText"] = False
        answer = await self._control(initialize)
        if answer.get("subtype") == "error":
            raise RequestError(-32603, f"Internal error: {answer.get('error')}")

    def _write(self, message: dict[str, Any]) -> None:
        if self.process is None or self.process.stdin is None or self.process.stdin.is_closing():
            raise ConnectionError("Connection closed")
        self.process.stdin.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def _control(self, request: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        request_id = uuid.uuid4().hex[:11]
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            self._write({"request_id": request_id, "type": "control_request", "request": request})
        except ConnectionError as error:
            self.pending.pop(request_id, None)
            future.set_exception(error)
        return future

    async def _prompt(self, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        message_id = str(uuid.uuid4())
        self.turn = turn = Turn(message_id)
        self._write(
            {
                "type": "user",
                "message": {"role": "user", "content": user_content(blocks)},
                "session_id": self.session_id,
                "parent_tool_use_id": None,
                "origin": {"kind": "human"},
                "uuid": message_id,
            }
        )
        try:
            return await asyncio.shield(turn.done)  # cancelled by the runner's gate: `notify` interrupts the turn
        finally:
            if self.turn is turn and turn.done.done():
                self.turn = None

    def _steer(self, params: dict[str, Any]) -> dict[str, Any]:
        turn = self.turn
        if turn is None or turn.done.done():
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        message_id = str(uuid.uuid4())
        turn.steered.add(message_id)
        turn.messages.add(message_id)
        self._write(
            {
                "type": "user",
                "message": {"role": "user", "content": user_content(params["prompt"])},
                "session_id": self.session_id,
                "parent_tool_use_id": None,
                "origin": {"kind": "human"},
                "uuid": message_id,
                "priority": "now",
            }
        )
        return {"outcome": "injected"}

    async def _receive(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        try:
            await read_objects(self.process.stdout, self._dispatch)
        finally:
            for future in [*self.pending.values(), *([self.turn.done] if self.turn else [])]:
                if not future.done():
                    future.set_exception(
                        RequestError(
                            -32603,
                            "Internal error: The Claude Agent process exited unexpectedly. Please start a new session.",
                        )
                    )

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind, turn = message.get("type"), self.turn
        if kind == "control_response":
            response = message.get("response") or {}
            future = self.pending.pop(str(response.get("request_id")), None)
            if future is not None and not future.done():
                future.set_result(response)
        elif kind == "control_request":
            request_id = str(message.get("request_id"))
            task = asyncio.create_task(self._answer(request_id, message.get("request") or {}))
            self.answering[request_id] = task
            task.add_done_callback(lambda _: self.answering.pop(request_id, None))
        elif kind == "control_cancel_request":
            answering = self.answering.get(str(message.get("request_id")))
            if answering is not None:
                answering.cancel()
        elif turn is None or message.get("parent_tool_use_id") is not None:
            return
        elif kind == "assistant":
            body = message.get("message") or {}
            turn.last_error = message.get("error") or None
            for block in body.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text":
                    turn.delivered_text = True
                    self.client.session_update(
                        {
                            "sessionId": self.session_id,
                            "update": {
                                "sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": block["text"]},
                                "messageId": body.get("id") or message.get("uuid"),
                            },
                        }
                    )
        elif kind == "user" and message.get("uuid") in turn.steered:
            turn.steered.discard(message["uuid"])
        elif (
            kind == "result"
            and not turn.steered
            and (message.get("user_message_uuid") is None or message["user_message_uuid"] in turn.messages)
        ):
            if not turn.done.done():
                try:
                    turn.done.set_result(self._outcome(turn, message))
                except RequestError as error:
                    turn.done.set_exception(error)

    def _outcome(self, turn: Turn, result: dict[str, Any]) -> dict[str, Any]:
        """The adapter's prompt response for a turn's result (its `case "result"`)."""
        subtype, is_error = result.get("subtype"), bool(result.get("is_error"))
        data = {"errorKind": turn.last_error} if turn.last_error else None
        errors = ", ".join(result.get("errors") or []) or str(subtype)
        if subtype == "success":
            text = str(result.get("result") or "")
            if "Please run /login" in text:
                raise RequestError(-32000, "Authentication required")
            if result.get("stop_reason") == "max_tokens":
                return {"stopReason": "max_tokens"}
            if is_error:
                raise RequestError(-32603, f"Internal error: {text}" if text else "Internal error", data)
            if not turn.delivered_text and not ((result.get("usage") or {}).get("output_tokens") or 0):
                self.client.session_update(
                    {
                        "sessionId": self.session_id,
                        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
                    }
                )
            return {"stopReason": "end_turn"}
        if subtype == "error_during_execution" and result.get("stop_reason") == "max_tokens":
            return {"stopReason": "max_tokens"}
        if is_error:
            raise RequestError(-32603, f"Internal error: {errors}", data)
        return {"stopReason": "end_turn" if subtype == "error_during_execution" else "max_turn_requests"}

    async def _answer(self, request_id: str, request: dict[str, Any]) -> None:
        """One control request from `claude`: a permission ask to the runner's gate, or one of the adapter's hooks."""
        reply: dict[str, Any]
        try:
            subtype = request.get("subtype")
            if subtype == "can_use_tool":
                name, tool_input, tool_use_id = (
                    request["tool_name"],
                    request.get("input"),
                    str(request.get("tool_use_id")),
                )
                if name == "AskUserQuestion":
                    raise RuntimeError("AskUserQuestion must be handled by ACP elicitation, not permission options")
                outcome = await self.client.request_permission(
                    {
                        "sessionId": self.session_id,
                        "options": permission_options(name),
                        "toolCall": {"toolCallId": tool_use_id, "rawInput": tool_input, "status": "pending"},
                    }
                )
                reply = {
                    "subtype": "success",
                    "request_id": request_id,
                    "response": permission_result(name, tool_input, tool_use_id, outcome),
                }
            elif subtype == "hook_callback":
                reply = {"subtype": "success", "request_id": request_id, "response": {"continue": True}}
            else:
                raise RuntimeError(f"Unsupported control request subtype: {subtype}")
        except asyncio.CancelledError:
            return
        except Exception as error:  # noqa: BLE001 - the SDK answers a failed callback with its message
            reply = {"subtype": "error", "request_id": request_id, "error": str(error)}
        with suppress(ConnectionError):
            self._write({"type": "control_response", "response": reply})

    async def close(self) -> None:
        """End the session as the SDK does: stdin closed, then SIGTERM and SIGKILL after its graces."""
        for task in list(self.answering.values()):
            task.cancel()
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            with suppress(Exception):
                process.stdin.close()
        for stop, grace in ((None, CLOSE_GRACES_S[0]), (process.terminate, CLOSE_GRACES_S[1]), (process.kill, None)):
            if stop is not None:
                with suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(process.wait(), grace)
                break
            except asyncio.TimeoutError:
                continue
        if self.reader is not None:
            with suppress(BaseException):
                await self.reader
