"""The one piece of the Prime path the stand-in does NOT reproduce, replaced by a labelled local shim.

verifiers (`mcp/launch.py` `reachable_url`) exposes a host-side MCP server to a remote box with
`PrimeTunnel().expose(port)`, which downloads `frpc` from GitHub and registers with Prime's tunnel
service — neither reachable here. `BridgeTunnel` has the same `expose(port)` shape and relays TCP
from the docker bridge address (which the stand-in's containers can reach) to the host-loopback
port. It proves nothing about Prime's tunnels: only that everything around the tunnel works.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class BridgeTunnel:
    """Stand-in for `verifiers.v1.interception.tunnel.PrimeTunnel` (same constructor and `expose`)."""

    host = "172.17.0.1"
    """Set by the test to the docker bridge gateway before any rollout."""
    opened: list[str] = []
    """Every URL handed out (class-wide, so the test can assert the shim was really used)."""

    def __init__(self, *_args: object, **_kwargs: object) -> None:
        pass

    @contextlib.asynccontextmanager
    async def expose(self, port: int) -> AsyncIterator[str]:
        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)

        server = await asyncio.start_server(relay, self.host, 0)
        url = f"http://{self.host}:{server.sockets[0].getsockname()[1]}"
        BridgeTunnel.opened.append(url)
        try:
            yield url
        finally:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()
