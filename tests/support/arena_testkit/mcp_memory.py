"""Serve a verifiers Toolset inside the test process and reach it through in-memory MCP clients.

The server is built as verifiers' `ServerBase._serve` builds it (`setup()`, an `MCPServer`,
`register`), so the tools, SerialToolset's argument-refusal middleware and its per-rollout lock,
and the state sync are the real ones; only the process and the streamable-HTTP transport are left
out (`arena_testkit.mcp_session.running_toolset` keeps those for the transport tests). Served, the
rollout's signed state coordinates arrive as URL parameters that verifiers' ASGI wrapper copies
into a context variable; here each client session sets that variable itself, so the toolset still
authenticates the coordinates and pulls and pushes the state over HTTP to a real `StateChannel`.
Sessions open at once share one state client, as they share the one a served toolset keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import httpx
from mcp.client import Client
from mcp.server.mcpserver import MCPServer
from verifiers import __version__

# Private, but it is the one seam between verifiers' HTTP wrapper and the toolset's state channel.
from verifiers.v1.mcp.server import STATE_TIMEOUT, _request_query_params

from arena_testkit.mcp_session import SECRET, StateChannel, signed_query, state_channel

__all__ = ["InProcessToolset", "serving_toolset"]


@dataclass
class InProcessToolset:
    """A toolset served in this process; `client(route)` opens an in-memory MCP session for one rollout."""

    server: MCPServer
    channel: StateChannel
    toolset: Any
    tls: ssl.SSLContext
    """Built once: loading the CA bundle for each new state client costs more than the tool call."""
    open_sessions: int = 0

    @contextlib.asynccontextmanager
    async def client(self, route: str, state: dict | None = None) -> AsyncIterator[Client]:
        """An MCP client for rollout `route`, whose state starts as `state` (if given)."""
        if state is not None:
            self.channel.states[route] = state
        # Set before the session starts: the server's tasks copy this context when they are spawned.
        token = _request_query_params.set({name: [value] for name, value in signed_query(self.channel, route).items()})
        try:
            async with self._state_client(), Client(self.server) as client:
                yield client
        finally:
            _request_query_params.reset(token)

    @contextlib.asynccontextmanager
    async def _state_client(self) -> AsyncIterator[None]:
        # An httpx client belongs to the event loop it first ran on, and each test call runs its own
        # loop; so the client lives while sessions are open and is replaced after the last closes.
        if not self.open_sessions:
            self.toolset._state_client = httpx.AsyncClient(timeout=STATE_TIMEOUT, verify=self.tls)
        self.open_sessions += 1
        try:
            yield
        finally:
            self.open_sessions -= 1
            if not self.open_sessions:
                client, self.toolset._state_client = self.toolset._state_client, None
                await client.aclose()

    def state(self, route: str) -> dict:
        return self.channel.states.get(route, {})


@contextlib.contextmanager
def serving_toolset(toolset: Any) -> Iterator[InProcessToolset]:
    """Serve `toolset` (a verifiers Toolset instance) as a shared server with a state channel."""
    # The toolset reads the secret from the environment on every call, as a served one does.
    with state_channel() as channel, mock.patch.dict(os.environ, {"VF_STATE_SECRET": SECRET}):
        os.environ.pop("VF_STATE_URL", None)  # a per-task channel would override the signed coordinates
        asyncio.run(toolset.setup())
        server = MCPServer(toolset.server_name or type(toolset).__name__, version=__version__)
        toolset.register(server)
        try:
            yield InProcessToolset(server=server, channel=channel, toolset=toolset, tls=ssl.create_default_context())
        finally:
            asyncio.run(toolset._exit_stack.aclose())
