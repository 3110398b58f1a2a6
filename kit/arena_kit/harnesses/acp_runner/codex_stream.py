"""Codex behind the ACP calls of Arena's runner: what codex-acp does for verifiers' codex harness, spoken straight
to Codex's app server (JSON-RPC on its stdio), without the adapter's node or the npm launcher's.

verifiers' codex harness runs `node codex-acp`, which starts `node codex.js app-server` (the npm launcher), which
starts the native `codex app-server`. `CodexStreamAgent` answers the runner's ACP requests itself and starts the
native binary with the launcher's env, then sends it what codex-acp `CODEX_ACP_VERSION` sends for that harness
(read from its source and checked against its own log, `APP_SERVER_LOGS`): the same `initialize` (its client
info is in the model's user agent), the same reads, `thread/start` with the gateway provider and trusted project,
and `turn/start` with the full-access mode. The reply is the last agent message, as the adapter's `messageId`
grouping leaves it; a failed turn comes back as the adapter's typed session failure, which the harness raises.
`speaks_for_codex` takes a rollout only when its config is one this was read against; any other runs the adapter.
Codex's own tool gate (a PreToolUse hook in its config) is Codex's, and runs as before.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from contextlib import suppress
from typing import Any, Protocol

from arena_kit.harnesses.acp_runner.claude_stream import MAX_LINE_BYTES, RequestError, read_objects

CODEX_VERSION = "0.155.1"
CODEX_ACP_VERSION = "1.12.0"
CODEX_ACP = re.compile(
    r"^(?P<root>/.*/vf-codex-(?P<codex>[^/]+)-(?P<adapter>[^/-]+)/acp/node_modules)/\.bin/codex-acp$"
)
NATIVE = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
"""The binary the npm launcher (`@openai/codex/bin/codex.js`) starts on x86-64 Linux, under the install's node_modules."""
CLIENT_INFO = {"name": "@agentclientprotocol/codex-acp", "version": CODEX_ACP_VERSION, "title": "Codex ACP"}
CAPABILITIES = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": ["sessionFailure"]}}}}
"""The client capabilities verifiers' codex harness gives the adapter: typed session failures, nothing else."""
GATEWAY_PROVIDER = "custom-gateway"
STRING_ERRORS = {
    "contextWindowExceeded": "limit",
    "sessionBudgetExceeded": "limit",
    "usageLimitExceeded": "limit",
    "rateLimitExceeded": "limit",
    "serverOverloaded": "service",
    "cyberPolicy": "request",
    "misalignmentPolicyViolation": "request",
    "internalServerError": "service",
    "unauthorized": "access",
    "badRequest": "request",
}
STRUCTURED_ERRORS = (
    "httpConnectionFailed",
    "responseStreamConnectionFailed",
    "responseStreamDisconnected",
    "responseTooManyFailedAttempts",
)
"""The adapter's failure categories for Codex's error info (its kinds folded into their categories)."""


class UpdateSink(Protocol):
    """What the runner's session takes from Codex: its updates."""

    def session_update(self, params: dict[str, Any]) -> None: ...


def _gateway(env: dict[str, str]) -> dict[str, Any] | None:
    try:
        request = json.loads(env.get("DEFAULT_AUTH_REQUEST") or "null")
    except ValueError:
        return None
    gateway = ((request or {}).get("_meta") or {}).get("gateway") if isinstance(request, dict) else None
    if not (
        isinstance(request, dict)
        and request.get("methodId") == "gateway"
        and set(request) <= {"methodId", "_meta"}
        and isinstance(gateway, dict)
        and set(gateway) <= {"baseUrl", "headers", "providerName"}
        and isinstance(gateway.get("baseUrl"), str)
        and gateway["baseUrl"].strip()
    ):
        return None
    return gateway


def _codex_config(env: dict[str, str]) -> dict[str, Any] | None:
    try:
        config = json.loads(env.get("CODEX_CONFIG") or "{}")
    except ValueError:
        return None
    return config if isinstance(config, dict) and set(config) <= {"model", "features"} else None


def speaks_for_codex(config: dict[str, Any], env: dict[str, str]) -> bool:
    """Whether this rollout's agent is the adapter release, at the Codex release, this was read against, started by
    verifiers' codex harness (or Arena's, which only preloads an exit hook) with nothing this does not reproduce."""
    command = config.get("command") or []
    found = CODEX_ACP.match(command[-1]) if len(command) in (2, 3) and command else None
    return (
        found is not None
        and (found["codex"], found["adapter"]) == (CODEX_VERSION, CODEX_ACP_VERSION)
        and all(part.startswith("--import=") for part in command[1:-1])
        and os.path.isfile(f"{found['root']}/{NATIVE}")
        and config.get("client_capabilities") == CAPABILITIES
        and not config.get("session_meta")
        and not config.get("mcp_urls")
        and env.get("INITIAL_AGENT_MODE") == "agent-full-access"
        and bool(env.get("CODEX_HOME"))
        and _gateway(env) is not None
        and _codex_config(env) is not None
        and not any(
            name in env
            for name in (
                "CODEX_PATH",
                "MODEL_PROVIDER",
                "DISABLE_MCP_CONFIG_FILTERING",
                "npm_config_user_agent",
                "npm_execpath",
            )
        )
    )


def codex_env(env: dict[str, str], modules: str) -> dict[str, str]:
    """The npm launcher's env for the native binary: the runner's, with its package root and manager marked."""
    out = {k: v for k, v in env.items() if not k.startswith("CODEX_MANAGED_BY_")}
    return {
        **out,
        "CODEX_MANAGED_PACKAGE_ROOT": os.path.realpath(f"{modules}/@openai/codex"),
        "CODEX_MANAGED_BY_NPM": "1",
    }


def turn_input(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ACP prompt blocks as Codex input items (the adapter's `buildPromptItems` for text and images)."""
    items: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "text":
            items.append({"type": "text", "text": block["text"], "text_elements": []})
        elif block["type"] == "image":
            items.append({"type": "image", "url": f"data:{block['mimeType']};base64,{block['data']}"})
    return items


def failure_category(info: Any) -> str:
    """The adapter's session-failure category for Codex's `codexErrorInfo`."""
    details = next(iter(info.values()), None) if isinstance(info, dict) and info else None
    status = details.get("httpStatusCode") if isinstance(details, dict) else None
    if info == "unauthorized" or status == 401:
        return "access"
    if status == 429:
        return "limit"
    if isinstance(info, str):
        return STRING_ERRORS.get(info, "service")
    if isinstance(info, dict) and any(kind in info for kind in STRUCTURED_ERRORS):
        return "connection"
    return "service"


class CodexTurn:
    """One prompt in flight: its Codex turn id once known, and the failure it ended with."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.started = asyncio.Event()
        self.done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.failure: dict[str, Any] | None = None

    def start(self, turn_id: Any) -> None:
        if self.id is None and isinstance(turn_id, str):
            self.id = turn_id
            self.started.set()


class CodexStreamAgent:
    """The runner's ACP agent, as codex-acp answers it, over one `codex app-server` per session."""

    def __init__(self, client: UpdateSink, command: list[str]) -> None:
        found = CODEX_ACP.match(command[-1])
        assert found is not None
        self.client, self.modules = client, found["root"]
        self.process: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.thread_id: str | None = None
        self.model: str | None = None
        self.effort = "medium"
        self.cwd = os.getcwd()
        self.turn: CodexTurn | None = None

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "promptCapabilities": {"embeddedContext": True, "image": True},
                    "mcpCapabilities": {"acp": False, "http": True, "sse": False},
                },
                "_meta": {"steering": {"supported": True}},
            }
        if method == "session/new":
            await self._start(params)
            return {"sessionId": self.thread_id}
        if method == "session/prompt":
            return await self._prompt(params["prompt"])
        if method == "_session/steering":
            return await self._steer(params)
        raise RequestError(-32601, "Method not found", {"method": method})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        turn = self.turn
        if method == "session/cancel" and turn is not None:
            self.turn = None
            if not turn.done.done():
                turn.done.set_result({"stopReason": "cancelled"})
            if turn.id is not None:
                self._send(
                    {
                        "id": self._id(),
                        "method": "turn/interrupt",
                        "params": {"threadId": self.thread_id, "turnId": turn.id},
                    }
                )

    async def _start(self, params: dict[str, Any]) -> None:
        env = dict(os.environ)
        gateway, config = _gateway(env), _codex_config(env)
        assert gateway is not None and config is not None
        self.cwd = params["cwd"]
        self.process = await asyncio.create_subprocess_exec(
            f"{self.modules}/{NATIVE}",
            "app-server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=codex_env(env, self.modules),
            limit=MAX_LINE_BYTES,
            start_new_session=True,
        )
        self.reader = asyncio.create_task(self._receive())
        await self._call(
            "initialize",
            {"capabilities": {"experimentalApi": True, "requestAttestation": False}, "clientInfo": CLIENT_INFO},
        )
        await self._call("account/read", {"refreshToken": False})
        await self._call("config/read", {"includeLayers": False})
        await self._call("skills/list", {"cwds": [self.cwd], "forceReload": True})
        await self._call("account/read", {"refreshToken": False})
        provider = {
            "name": gateway.get("providerName") or "User-provided gateway",
            "base_url": gateway["baseUrl"],
            "http_headers": {"X-Client-Feature-ID": "codex", **(gateway.get("headers") or {})},
            "wire_api": "responses",
        }
        features = {**(config.get("features") or {}), "cwd_relative_turn_diffs": False}
        thread_config = {
            **config,
            "features": features,
            "model_providers": {GATEWAY_PROVIDER: provider},
            "projects": {self.cwd: {"trust_level": "trusted"}},
        }
        started = await self._call(
            "thread/start", {"config": thread_config, "modelProvider": GATEWAY_PROVIDER, "cwd": self.cwd}
        )
        self.thread_id = started["thread"]["id"]
        self.model = config.get("model") or started["thread"].get("model")
        listed = await self._call("model/list", {"cursor": None, "limit": None})
        known = next((m for m in listed.get("data") or [] if m.get("id") == self.model), None)
        self.effort = (known or {}).get("defaultReasoningEffort") or "medium"
        await self._call("skills/list", {"cwds": [self.cwd]})

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def _send(self, message: dict[str, Any]) -> None:
        if self.process is None or self.process.stdin is None or self.process.stdin.is_closing():
            raise ConnectionError("Connection closed")
        self.process.stdin.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        request_id = self._id()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            self._send({"id": request_id, "method": method, "params": params})
            return await future
        finally:
            self.pending.pop(request_id, None)

    async def _prompt(self, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        self.turn = turn = CodexTurn()
        await self._call("skills/list", {"cwds": [self.cwd], "forceReload": True})
        started = await self._call(
            "turn/start",
            {
                "threadId": self.thread_id,
                "input": turn_input(blocks),
                "approvalPolicy": "never",
                "approvalsReviewer": "user",
                "sandboxPolicy": {"type": "dangerFullAccess"},
                "summary": "auto",
                "effort": self.effort,
                "model": self.model,
                "serviceTier": None,
            },
        )
        turn.start((started.get("turn") or {}).get("id"))
        try:
            return await asyncio.shield(turn.done)  # cancelled by the runner's gate: `notify` interrupts the turn
        finally:
            if self.turn is turn and turn.done.done():
                self.turn = None

    async def _steer(self, params: dict[str, Any]) -> dict[str, Any]:
        """Into the running turn once Codex has started it (as the adapter waits for it); idle: prompt required."""
        idle = {"outcome": "promptRequired", "reason": "noRunningTurn"}
        turn = self.turn
        if turn is None or turn.done.done():
            return idle
        started: asyncio.Future[Any] = asyncio.ensure_future(turn.started.wait())
        waiters: list[asyncio.Future[Any]] = [started, turn.done]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if turn.done.done() or turn.id is None:
            return idle
        try:
            await self._call(
                "turn/steer",
                {"threadId": self.thread_id, "expectedTurnId": turn.id, "input": turn_input(params["prompt"])},
            )
        except RequestError:
            if turn.done.done():
                return idle
            raise
        return {"outcome": "injected"}

    async def _receive(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        try:
            await read_objects(self.process.stdout, self._dispatch)
        finally:
            error = RequestError(-32603, "Internal error: Codex process exited")
            for future in [*self.pending.values(), *([self.turn.done] if self.turn else [])]:
                if not future.done():
                    future.set_exception(error)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method is None:
            future = self.pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is not None and not future.done():
                if "error" in message:
                    error = message.get("error") or {}
                    future.set_exception(
                        RequestError(error.get("code", -32603), error.get("message", "Error"), error.get("data"))
                    )
                else:
                    future.set_result(message.get("result"))
            return
        if "id" in message:  # a server request: with approvals off none is expected; decline as unsupported
            with suppress(ConnectionError):
                self._send({"id": message["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}})
            return
        turn = self.turn
        if turn is None or params.get("threadId") not in (None, self.thread_id):
            return
        if method == "turn/started":
            turn.start((params.get("turn") or {}).get("id"))
        elif method == "item/agentMessage/delta":
            self.client.session_update(
                {
                    "sessionId": self.thread_id,
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": params.get("delta", "")},
                        "messageId": params.get("itemId"),
                    },
                }
            )
        elif method == "error" and not params.get("willRetry") and params.get("turnId") in (None, turn.id):
            error = params.get("error") or {}
            turn.failure = {
                "category": failure_category(error.get("codexErrorInfo")),
                "severity": "error",
                "title": error.get("message"),
            }
        elif (
            method == "turn/completed"
            and (params.get("turn") or {}).get("id") in (None, turn.id)
            and not turn.done.done()
        ):
            done = params.get("turn") or {}
            if done.get("status") == "interrupted":
                turn.done.set_result({"stopReason": "cancelled"})
                return
            if done.get("status") == "failed" and turn.failure is None:
                error = done.get("error") or {"message": "Turn failed", "codexErrorInfo": None}
                turn.failure = {
                    "category": failure_category(error.get("codexErrorInfo")),
                    "severity": "error",
                    "title": error.get("message"),
                }
            response: dict[str, Any] = {"stopReason": "end_turn"}
            if turn.failure is not None:
                response["_meta"] = {"jetbrains": {"air": {"sessionFailure": turn.failure}}}
            turn.done.set_result(response)

    async def close(self) -> None:
        """End the session: Codex and everything it started are killed at once (its home is removed right after)."""
        process, self.process = self.process, None
        if process is None:
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        if self.reader is not None:
            with suppress(BaseException):
                await self.reader
