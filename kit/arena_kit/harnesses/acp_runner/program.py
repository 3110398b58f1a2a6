"""Arena's in-box ACP runner: verifiers' `acp/runner.py` on the standard library alone.

verifiers' ACP harnesses (claude_code, codex) run one runner per rollout in the box: it reads the
host's packets (8-byte big-endian length + JSON: `prompt`, `steer`, `shutdown`) on stdin, drives the
agent (`config["command"]`) over ACP (newline-delimited JSON-RPC 2.0 on the agent's stdio), asks the
rollout's tool gate before every tool call, and answers each packet with one packet on stdout.
verifiers' runner does this on `agent-client-protocol` and `httpx`, whose import alone (~270
pydantic models) costs more CPU than the rest of its work. This port sends the agent the same
messages (the same fields that library's serialiser keeps), answers it the same way, and returns the
same packets; `tests/kit/harnesses/acp_runner` runs both against one scripted agent and compares
every line. For verifiers' claude_code and codex harnesses it drives the agent itself in place of its node ACP
adapter (`claude_stream`, `codex_stream`). It runs on the image's `python3 -I`, spliced with them into one file (`RUNNER_SOURCE`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import traceback
import urllib.request
from contextlib import suppress
from typing import Any

from arena_kit.harnesses.acp_runner.claude_stream import ClaudeStreamAgent, RequestError, speaks_for
from arena_kit.harnesses.acp_runner.codex_stream import CodexStreamAgent, speaks_for_codex

MAX_PACKET_BYTES = 128 * 1024 * 1024
PROTOCOL_VERSION = 1
SHUTDOWN_TIMEOUT_S = 2.0
"""As the library's `spawn_stdio_transport`: after stdin closes, the agent gets this long before
SIGTERM, and as long again before SIGKILL."""
NULL_RESULT = frozenset(
    {
        "fs/write_text_file",
        "fs/read_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
    }
)
"""Client methods verifiers' client inherits unimplemented from the library: answered `null`
(`terminal/release`: `{}`); any other request from the agent is "Method not found"."""


def gate_decision(url: str, secret: str, tool_call_id: str, arguments: Any) -> str:
    """The rollout's `/tool` gate's word on one tool call ("allow", "deny", "stop"); unreachable: deny."""
    try:
        if tool_call_id.startswith("pi-ui-") and isinstance(arguments, dict) and arguments.get("method") == "confirm":
            tool_call_id, arguments = arguments["title"], json.loads(arguments["message"])
        body = json.dumps({"tool_call_id": tool_call_id, "arguments": arguments}).encode()
        request = urllib.request.Request(
            url, body, {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return str(json.loads(response.read())["action"])
    except Exception as error:  # noqa: BLE001 - an unreachable gate lets nothing run
        print(f"tool gate denied {tool_call_id}: {error}", file=sys.stderr)
        return "deny"


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def user_content_blocks(contents: list[Any], supports_images: bool) -> list[dict[str, Any]]:
    """One user turn's ordered contents as ACP prompt blocks (verifiers' `user_content_blocks`)."""
    blocks: list[dict[str, Any]] = []
    for index, content in enumerate(contents):
        if index:
            blocks.append(text_block("\n\n"))
        parts: list[dict[str, Any]] = (
            [{"type": "text", "text": content or ""}] if isinstance(content, str) or not content else content
        )
        for part in parts:
            if part["type"] == "text":
                blocks.append(text_block(part["text"]))
                continue
            if not supports_images:
                raise ValueError("ACP agent does not support image prompts")
            metadata, separator, data = part["image_url"]["url"].partition(",")
            media_type, *parameters = metadata.removeprefix("data:").split(";")
            if (
                not separator
                or not metadata.startswith("data:image/")
                or not any(v.lower() == "base64" for v in parameters)
            ):
                raise ValueError("ACP image prompts require base64 data:image URLs")
            blocks.append({"type": "image", "data": data, "mimeType": media_type})
    return blocks


def mcp_servers(config: dict[str, Any]) -> list[dict[str, Any]]:
    headers = config.get("mcp_headers", {})
    return [
        {
            "type": "http",
            "name": name,
            "url": url,
            "headers": [{"name": k, "value": v} for k, v in headers.get(name, {}).items()],
        }
        for name, url in config["mcp_urls"].items()
    ]


class Agent:
    """One ACP agent process and the JSON-RPC connection to it."""

    def __init__(self, process: asyncio.subprocess.Process, client: Session) -> None:
        self.process, self.client = process, client
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.reader = asyncio.create_task(self._receive())

    @classmethod
    async def spawn(cls, command: list[str], client: Session) -> Agent:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=os.environ.copy(),
            limit=MAX_PACKET_BYTES,
        )
        return cls(process, client)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self.reader.done():
            raise ConnectionError("Connection closed")
        request_id, self.next_id = self.next_id, self.next_id + 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            self._send({"id": request_id, "method": method, "params": params})
            return await future
        finally:
            self.pending.pop(request_id, None)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.reader.done():
            raise ConnectionError("Connection closed")
        self._send({"method": method, "params": params})

    async def _receive(self) -> None:
        assert self.process.stdout is not None
        try:
            while line := await self.process.stdout.readline():
                with suppress(ValueError):
                    self._dispatch(json.loads(line))
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("Connection closed"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            future = self.pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                error = message.get("error") or {}
                future.set_exception(
                    RequestError(error.get("code", -32603), error.get("message", "Error"), error.get("data"))
                )
            else:
                future.set_result(message.get("result"))
        elif "id" not in message:
            if method == "session/update":  # in order, before any later response: the reply is complete when it lands
                self.client.session_update(message.get("params") or {})
        else:
            task = asyncio.create_task(self._answer(message["id"], method, message.get("params") or {}))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"id": request_id}
        try:
            if method == "session/request_permission":
                reply["result"] = await self.client.request_permission(params)
            elif method in NULL_RESULT or method == "terminal/release":
                reply["result"] = {} if method == "terminal/release" else None
            else:
                reply["error"] = {"code": -32601, "message": "Method not found", "data": {"method": method}}
        except (KeyError, TypeError, AttributeError) as error:
            reply["error"] = {"code": -32602, "message": "Invalid params", "data": {"details": str(error)}}
        with suppress(ConnectionError, RuntimeError):
            self._send(reply)

    async def close(self) -> None:
        """Stop answering, then the library's shutdown: stdin closed, a grace, SIGTERM, a grace, SIGKILL."""
        for task in [*self.tasks, self.reader]:
            task.cancel()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("Connection closed"))
        stdin = self.process.stdin
        if stdin is not None:
            with suppress(Exception):
                stdin.write_eof()
            with suppress(Exception):
                stdin.close()
                await stdin.wait_closed()
        for stop in (None, self.process.terminate, self.process.kill):
            if stop is not None:
                with suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(
                    self.process.wait(), SHUTDOWN_TIMEOUT_S if stop is not self.process.kill else None
                )
                return
            except asyncio.TimeoutError:
                continue


class Session:
    """One live agent and native session shared by the rollout's turns (verifiers' `ACPSession` and client)."""

    def __init__(self) -> None:
        self.gate: tuple[str, str] | None = None
        self.agent: Agent | ClaudeStreamAgent | CodexStreamAgent | None = None
        self.capabilities: dict[str, Any] = {}
        self.supports_steering = False
        self.session_id: str | None = None
        self.is_new = True
        self.prompt_task: asyncio.Task[Any] | None = None
        self.reset()

    def reset(self) -> None:
        self.visible_reply = ""
        self.message_id: str | None = None
        self.stop_reason: str | None = None
        self.response_metadata: dict[str, Any] = {}
        self.update_metadata: list[dict[str, Any]] = []

    def turn_result(self) -> dict[str, Any]:
        return {
            "reply": self.visible_reply,
            "stop_reason": self.stop_reason,
            "response_metadata": self.response_metadata,
            "update_metadata": self.update_metadata,
        }

    def session_update(self, params: dict[str, Any]) -> None:
        update = params.get("update") or {}
        metadata = dict(params.get("_meta") or {})
        if isinstance(update.get("_meta"), dict):
            metadata.update(update["_meta"])
        if metadata:
            self.update_metadata.append(metadata)
        content = update.get("content")
        if (
            update.get("sessionUpdate") == "agent_message_chunk"
            and isinstance(content, dict)
            and content.get("type") == "text"
        ):
            message_id = update.get("messageId")
            if message_id is not None and message_id != self.message_id:
                self.visible_reply, self.message_id = "", message_id
            self.visible_reply += content["text"]

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the rollout before execution: deny rejects one call; stop cancels the turn."""
        kinds = ("allow_once", "allow_always")
        if self.gate is not None:
            call = params["toolCall"]
            decision = await asyncio.to_thread(gate_decision, *self.gate, call["toolCallId"], call.get("rawInput"))
            if decision == "stop":
                self.stop_reason = "cancelled"
                if self.prompt_task is not None:
                    self.prompt_task.cancel()
                return {"outcome": {"outcome": "cancelled"}}
            if decision != "allow":
                kinds = ("reject_once", "reject_always")
        options = params["options"]
        option = next((item for kind in kinds for item in options if item.get("kind") == kind), None)
        return {
            "outcome": {"outcome": "selected", "optionId": option["optionId"]} if option else {"outcome": "cancelled"}
        }

    async def start(self, config: dict[str, Any]) -> None:
        if speaks_for(config, dict(os.environ), os.getcwd()):
            self.agent = ClaudeStreamAgent(self)  # Claude Code itself, as its ACP adapter would drive it
        elif speaks_for_codex(config, dict(os.environ)):
            self.agent = CodexStreamAgent(self, config["command"])  # Codex's app server, as codex-acp would drive it
        else:
            self.agent = await Agent.spawn(config["command"], self)
        try:
            capabilities = config["client_capabilities"]
            params: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION}
            if capabilities:
                params["clientCapabilities"] = {"auth": {}, **capabilities}
            initialized = await self.agent.request("initialize", params) or {}
            self.capabilities = initialized.get("agentCapabilities") or {}
            self.supports_steering = ((initialized.get("_meta") or {}).get("steering") or {}).get("supported") is True
            new: dict[str, Any] = {"cwd": os.getcwd(), "mcpServers": mcp_servers(config)}
            if config["session_meta"]:
                new["_meta"] = config["session_meta"]
            session = await self.agent.request("session/new", new)
        except BaseException:
            with suppress(BaseException):
                await self.agent.close()
            self.agent = None
            raise
        self.session_id, self.is_new = session["sessionId"], True

    async def run(self, config: dict[str, Any]) -> dict[str, Any]:
        gate = config.get("tool_interception")
        if gate and self.gate is None:
            self.gate = (gate["url"], gate["secret"])
        if self.agent is None:
            await self.start(config)
        assert self.agent is not None and self.session_id is not None
        self.reset()
        supports_images = bool((self.capabilities.get("promptCapabilities") or {}).get("image"))
        blocks = []
        if self.is_new and config["system_prompt"]:
            blocks.append(text_block(f"(system)\n{config['system_prompt']}\n\n[user]\n"))
        blocks.extend(user_content_blocks(config["user_contents"], supports_images))
        if not blocks:
            raise ValueError("ACP prompt has no content")
        try:
            self.prompt_task = asyncio.create_task(
                self.agent.request("session/prompt", {"sessionId": self.session_id, "prompt": blocks})
            )
            response = await self.prompt_task or {}
            self.stop_reason = response.get("stopReason")
            self.response_metadata = dict(response.get("_meta") or {})
        except asyncio.CancelledError:
            if self.stop_reason != "cancelled":
                raise
            self.agent.notify("session/cancel", {"sessionId": self.session_id})
        finally:
            self.prompt_task = None
        self.is_new = False
        return self.turn_result()

    async def steer(self, message: str, message_id: str | None = None) -> Any:
        if self.agent is None or self.session_id is None:
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        if not self.supports_steering:
            raise NotImplementedError("ACP agent does not advertise steering support")
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "prompt": [text_block(message)],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}},
        }
        if message_id is not None:
            params["messageId"] = message_id
        return await self.agent.request("_session/steering", params)

    async def close(self) -> dict[str, Any]:
        response_metadata: dict[str, Any] = {}
        try:
            if (
                self.agent is not None
                and self.session_id is not None
                and (self.capabilities.get("sessionCapabilities") or {}).get("close") is not None
            ):
                with suppress(Exception):
                    response = await self.agent.request("session/close", {"sessionId": self.session_id}) or {}
                    response_metadata = dict(response.get("_meta") or {})
        finally:
            if self.agent is not None:
                await self.agent.close()
            self.gate, self.agent, self.session_id, self.is_new = None, None, None, True
        return response_metadata


async def read_packet(stream: asyncio.StreamReader) -> dict[str, Any] | None:
    try:
        header = await stream.readexactly(8)
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise EOFError("ACP session packet ended early") from error
    size = int.from_bytes(header, "big")
    if size > MAX_PACKET_BYTES:
        raise ValueError(f"ACP session packet is too large: {size} bytes")
    try:
        packet: dict[str, Any] = json.loads((await stream.readexactly(size)).decode())
    except asyncio.IncompleteReadError as error:
        raise EOFError("ACP session packet ended early") from error
    return packet


def write_packet(value: dict[str, Any]) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    if len(data) > MAX_PACKET_BYTES:
        raise ValueError(f"ACP session packet is too large: {len(data)} bytes")
    sys.stdout.buffer.write(len(data).to_bytes(8, "big") + data)
    sys.stdout.buffer.flush()


async def handle(session: Session, request: dict[str, Any], prompt_lock: asyncio.Lock) -> None:
    operation = request.get("operation")
    response: dict[str, Any]
    try:
        if operation == "prompt":
            async with prompt_lock:
                result = await session.run(request["config"])
        elif operation == "steer":
            result = await session.steer(request["message"], request.get("message_id"))
        elif operation == "shutdown":
            result = {"response_metadata": await session.close()}
        else:
            raise ValueError(f"unknown ACP session operation: {operation!r}")
        response = {"ok": True, "result": result}
    except Exception as error:  # noqa: BLE001 - serialize protocol failures
        traceback.print_exc()
        response = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        if isinstance(error, RequestError) and isinstance(error.data, dict):
            response["error"] = error.data.get("details") or str(error)
            response["error_data"] = error.data
        if operation == "prompt":
            response["result"] = session.turn_result()
    response["id"] = request.get("id")
    write_packet(response)


async def serve() -> None:
    session, prompt_lock = Session(), asyncio.Lock()
    reader = asyncio.StreamReader(limit=MAX_PACKET_BYTES)
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    tasks: set[asyncio.Task[None]] = set()
    try:
        while request := await read_packet(reader):
            if request.get("operation") == "shutdown":
                if tasks:
                    await asyncio.gather(*tasks)
                await handle(session, request, prompt_lock)
                break
            task = asyncio.create_task(handle(session, request, prompt_lock))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await session.close()


async def main() -> None:
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    if task is not None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with suppress(NotImplementedError):
                loop.add_signal_handler(sig, task.cancel)
    with suppress(asyncio.CancelledError):
        await serve()


if __name__ == "__main__":
    asyncio.run(main())
