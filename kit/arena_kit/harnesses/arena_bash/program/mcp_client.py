"""An MCP client over streamable HTTP: the subset verifiers' bash program uses (list and call tools), with its retries."""

from __future__ import annotations

import http.client
import json
import random
import time
from typing import Any

from arena_kit.harnesses.arena_bash.program.wire import TransportError, json_body, send_request, sse_data

MCP_CALL_ATTEMPTS = 6
MCP_TIMEOUT = 600.0
MCP_MODERN_VERSION = "2026-07-28"
MCP_HANDSHAKE_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "arena-lean", "version": "0.1.0"}


class MCPError(Exception):
    """A JSON-RPC error or an unreadable answer from an MCP server."""


class MCPServer:
    """One server: initialize once, then tools/list and tools/call, reconnecting on failure."""

    def __init__(self, spec: dict[str, Any]):
        self.url = spec["url"]
        self.headers = dict(spec.get("headers") or {})
        self.timeout = float(spec.get("timeout", MCP_TIMEOUT))
        self.connect_timeout = float(spec.get("connect_timeout", 5.0))
        self.session: dict[str, str] | None = None
        self.next_id = 0

    def _post(self, message: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any] | None:
        headers = {
            **self.headers,
            **extra,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        response = send_request("POST", self.url, headers, json_body(message), self.timeout, self.connect_timeout)
        try:
            if response.status == 202 or "id" not in message:
                response.read()
                if response.status >= 400:
                    raise MCPError(f"{message['method']}: HTTP {response.status}")
                return None
            if response.status >= 400:
                raise MCPError(f"{message['method']}: HTTP {response.status}: {response.read()[:500]!r}")
            if session_id := response.getheader("mcp-session-id"):
                extra["mcp-session-id"] = session_id
            if (response.getheader("content-type") or "").startswith("text/event-stream"):
                answer = _sse_answer(response, message["id"])
            else:
                answer = json.loads(response.read())
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise MCPError(f"{message['method']}: {error}") from error
        finally:
            response.close()
        if not isinstance(answer, dict):
            raise MCPError(f"{message['method']}: no answer")
        if "error" in answer:
            raise MCPError(f"{message['method']}: {answer['error'].get('message')}")
        return answer.get("result") or {}

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            self.session = self._handshake()
        headers = dict(self.session)
        if headers.get("mcp-protocol-version") == MCP_MODERN_VERSION:
            # The stateless (2026-07-28) era: every request names itself and carries the client's _meta.
            headers["mcp-method"] = method
            if method == "tools/call":
                headers["mcp-name"] = str(params.get("name"))
            params = {**params, "_meta": self._meta()}
        return self._post({"jsonrpc": "2.0", "id": self._id(), "method": method, "params": params}, headers) or {}

    def _handshake(self) -> dict[str, str]:
        """The mcp SDK's `auto` mode: probe `server/discover`, else the 2025 `initialize` handshake."""
        session: dict[str, str] = {"mcp-protocol-version": MCP_MODERN_VERSION}
        try:
            self._post(
                {"jsonrpc": "2.0", "id": self._id(), "method": "server/discover", "params": {"_meta": self._meta()}},
                {**session, "mcp-method": "server/discover"},
            )
            return session
        except MCPError:
            pass
        session = {}
        init = (
            self._post(
                {
                    "jsonrpc": "2.0",
                    "id": self._id(),
                    "method": "initialize",
                    "params": {"protocolVersion": MCP_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
                },
                session,
            )
            or {}
        )
        session["mcp-protocol-version"] = str(init.get("protocolVersion") or MCP_HANDSHAKE_VERSION)
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        return session

    @staticmethod
    def _meta() -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": MCP_MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            "io.modelcontextprotocol/clientCapabilities": {},
        }

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def run(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """verifiers' MCPConnection: six attempts, exponential jittered waits, a fresh session each."""
        for attempt in range(MCP_CALL_ATTEMPTS):
            try:
                return self._rpc(method, params)
            except (MCPError, TransportError):
                self.session = None
                if attempt == MCP_CALL_ATTEMPTS - 1:
                    raise
                time.sleep(min(0.5 * 2**attempt, 30.0) + random.uniform(0, 1))
        raise AssertionError("unreachable")


def _sse_answer(response: http.client.HTTPResponse, request_id: int) -> dict[str, Any] | None:
    for data in sse_data(response):
        event = json.loads(data)
        if isinstance(event, dict) and event.get("id") == request_id and ("result" in event or "error" in event):
            return event
    return None


def connect_mcp(config: dict[str, Any], reserved: set[str]) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    tool_schemas: list[Any] = []
    dispatch: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    for name, spec in config.get("mcpServers", {}).items():
        server = servers[name] = MCPServer(spec)
        for tool in server.run("tools/list", {}).get("tools") or []:
            full = f"{name}_{tool['name']}" if name else tool["name"]
            if full in reserved or full in dispatch:
                raise ValueError(f"duplicate tool name {full!r}; keep MCP tool names qualified")
            tool_schemas.append(
                {
                    "type": "function",
                    "function": {
                        "name": full,
                        "description": tool.get("description") or "",
                        "parameters": tool.get("inputSchema"),
                    },
                }
            )
            dispatch[full] = (name, tool["name"])
    return tool_schemas, dispatch, servers


def mcp_content(blocks: list[Any]) -> object:
    """verifiers' `mcp_content_to_chat_content`: text blocks joined by newlines, images as parts."""
    parts = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "image":
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"}}
            )
        else:
            parts.append({"type": "text", "text": str(block)})
    if not parts:
        return str(blocks)
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts
