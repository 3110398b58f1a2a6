"""Run a verifiers Toolset module as a real MCP server process with a real state channel.

This is what verifiers does for a shared (per-eval) toolset, minus the interception server: the
server process gets `VF_CONFIG` and `VF_STATE_SECRET`; each rollout reaches it through signed URL
parameters naming its state route; the state channel here is a small aiohttp server that keeps one
JSON state per route, as the interception server keeps one `trace.state` per rollout. Tests that do
not test the transport use `arena_testkit.mcp_memory`, the same server in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from aiohttp import web
from mcp.client import Client
from verifiers.v1.mcp.server import (
    STATE_ROUTE_PARAM,
    STATE_SIGNATURE_PARAM,
    STATE_URL_PARAM,
    state_signature,
)

from arena_testkit import SUPPORT
from arena_testkit.thread_server import serve_in_thread

SECRET = "test-state-secret"
START_DEADLINE_S = 90.0  # a loaded 2-core machine has taken 37 s to import the server


@dataclass
class StateChannel:
    """Per-route JSON states behind `GET/PUT /state`, authenticated like the interception server."""

    states: dict[str, dict] = field(default_factory=dict)
    url: str = ""

    def app(self) -> web.Application:
        async def get(request: web.Request) -> web.Response:
            if request.headers.get("Authorization") != f"Bearer {SECRET}":
                return web.json_response({"error": "unauthorized"}, status=401)
            route = request.headers.get("X-Verifiers-State-Route", "")
            return web.json_response(self.states.get(route, {}))

        async def put(request: web.Request) -> web.Response:
            if request.headers.get("Authorization") != f"Bearer {SECRET}":
                return web.json_response({"error": "unauthorized"}, status=401)
            route = request.headers.get("X-Verifiers-State-Route", "")
            self.states[route] = await request.json()
            return web.json_response({"ok": True})

        app = web.Application()
        app.router.add_get("/state", get)
        app.router.add_put("/state", put)
        return app


@contextlib.contextmanager
def state_channel() -> Iterator[StateChannel]:
    """Serve a StateChannel on 127.0.0.1 from a background thread."""
    channel = StateChannel()
    with serve_in_thread(channel.app(), START_DEADLINE_S) as url:
        channel.url = f"{url}/state"
        yield channel


def signed_query(channel: StateChannel, route: str) -> dict[str, str]:
    """The URL parameters by which rollout `route` names, and proves, its state destination."""
    return {
        STATE_URL_PARAM: channel.url,
        STATE_ROUTE_PARAM: route,
        STATE_SIGNATURE_PARAM: state_signature(SECRET, channel.url, route),
    }


class ToolsetServer(Protocol):
    """A served toolset as tests use it, whether in its own process or in this one."""

    channel: StateChannel

    def client(self, route: str, state: dict | None = None) -> AbstractAsyncContextManager[Client]: ...

    def state(self, route: str) -> dict: ...


@dataclass
class ToolsetProcess:
    """A running toolset server; `client(route)` opens an MCP session for one rollout."""

    port: int
    channel: StateChannel
    log_path: Path

    def url(self, route: str) -> str:
        return f"http://127.0.0.1:{self.port}/mcp?{urlencode(signed_query(self.channel, route))}"

    def client(self, route: str, state: dict | None = None) -> Client:
        """An MCP client for rollout `route`, whose state starts as `state` (if given)."""
        if state is not None:
            self.channel.states[route] = state
        return Client(self.url(route))

    def state(self, route: str) -> dict:
        return self.channel.states.get(route, {})


@contextlib.contextmanager
def running_toolset(module: str, config: dict | None = None) -> Iterator[ToolsetProcess]:
    """Start `python -m module` as verifiers would start a shared toolset, and stop it after."""
    with state_channel() as channel, tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        log_path = Path(tmp) / "server.log"
        env = {
            **os.environ,
            "VF_CONFIG": json.dumps(config or {}),
            "VF_STATE_SECRET": SECRET,
            "MCP_HOST": "127.0.0.1",
            "MCP_PORT": "0",
            "MCP_PORT_FILE": str(port_file),
        }
        env.pop("VF_STATE_URL", None)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(SUPPORT), env.get("PYTHONPATH")])
        )  # test-only toolsets import too
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", module], env=env, stdout=log, stderr=log)
        try:
            port = _wait_for_port(proc, port_file, log_path)
            yield ToolsetProcess(port=port, channel=channel, log_path=log_path)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _wait_for_port(proc: subprocess.Popen, port_file: Path, log_path: Path) -> int:
    """Wait until the server listens (port file written and a TCP connect succeeds)."""
    import socket

    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"toolset exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
        if port_file.exists() and port_file.read_text().strip():
            port = int(port_file.read_text())
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return port
        time.sleep(0.05)
    raise RuntimeError(f"toolset did not listen within {START_DEADLINE_S}s:\n{log_path.read_text()[-2000:]}")


def result_text(result) -> str:
    """The concatenated text content of an MCP CallToolResult."""
    return "".join(getattr(block, "text", "") for block in result.content)


async def call(server: ToolsetServer, route: str, tool: str, arguments: dict | None = None):
    """One tool call in its own MCP session (verifiers' shared servers are stateless HTTP)."""
    async with server.client(route) as client:
        return await client.call_tool(tool, arguments or {})


__all__ = [
    "SECRET",
    "StateChannel",
    "ToolsetProcess",
    "ToolsetServer",
    "call",
    "result_text",
    "running_toolset",
    "signed_query",
    "state_channel",
]
