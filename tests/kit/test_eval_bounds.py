"""Per-rollout bounds in the shared eval process (`arena_kit.verifiers_seam.bounds`), on verifiers' real
interception server and egress proxy: a body over the cap, too many requests or bytes in flight and a slow
body are refused to that rollout alone, which stops as the agent's fault; one box cannot hold more than its
share of proxy connections, and the one past it stops the rollout in that box. Each crossing is shown on verifiers' own code first (it lets it through)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from aiohttp import web
from verifiers.v1.configs.runtime import NetworkPolicyConfig
from verifiers.v1.interception import server as server_module
from verifiers.v1.interception.server import InterceptionServer
from verifiers.v1.runtimes.docker.egress import EgressProxy, NetworkPolicy

from arena_kit.box.faults import AGENT_FAULT_STOPS, over_bound
from arena_kit.verifiers_seam import bounds

ROUTE = "/v1/chat/completions"


class _Trace:
    def __init__(self, name: str) -> None:
        self.id, self.info, self.stop_condition = name, {}, None

    def stop(self, condition: str) -> None:
        self.stop_condition = self.stop_condition or condition


class _Session:
    def __init__(self, name: str) -> None:
        self.trace = _Trace(name)

    @property
    def stopped(self) -> bool:
        return self.trace.stop_condition is not None


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """verifiers' server with its turn handler stood in for (it reads the body and answers 200), on the code as
    read (the seam undone after the test); yields the body sizes the stand-in received."""
    seen: list[int] = []

    async def handle_request(self: Any, request: web.Request, dialect: Any) -> web.Response:
        seen.append(len(await request.read()))
        gate = getattr(self, "gate", None)
        if gate is not None:
            await gate.wait()
        return web.json_response({"ok": True})

    monkeypatch.setattr(InterceptionServer, "handle_request", handle_request)
    for name in ("_handler_for", "_aux_handler_for"):
        method = getattr(InterceptionServer, name)
        monkeypatch.setattr(InterceptionServer, name, getattr(method, "__wrapped__", method))
    monkeypatch.setattr(server_module, "MAX_REQUEST_BODY", 1024**3)
    return seen


@contextlib.asynccontextmanager
async def _server(*sessions: str) -> AsyncIterator[tuple[InterceptionServer, httpx.AsyncClient]]:
    async with InterceptionServer() as server, httpx.AsyncClient(timeout=30) as client:
        for name in sessions:
            server.sessions[name] = _Session(name)  # type: ignore[assignment]
        yield server, client


def _post(client: httpx.AsyncClient, server: InterceptionServer, secret: str, body: bytes) -> Any:
    return client.post(f"{server.base_url}{ROUTE}", content=body, headers={"Authorization": f"Bearer {secret}"})


def test_a_body_over_the_cap_reaches_verifiers_handler_and_is_refused_with_the_seam(handled: list[int]) -> None:
    body = b" " * (bounds.BODY_CAP + (1 << 20))

    async def once() -> tuple[int, Any, Any]:
        async with _server("a", "b") as (server, client):
            reply = await _post(client, server, "a", body)
            other = await _post(client, server, "b", b"{}")
            return reply.status_code, server.sessions["a"].trace, other.status_code  # type: ignore[attr-defined]

    status, trace, other = asyncio.run(once())
    assert status == 200 and handled == [len(body), 2] and trace.stop_condition is None  # verifiers read it all
    handled.clear()
    bounds.bound_interception()
    status, trace, other = asyncio.run(once())
    assert status == 413 and handled == [2] and other == 200  # refused unread; the other rollout served
    assert trace.stop_condition in AGENT_FAULT_STOPS and "at most 8388608" in trace.info["arena_over_bound"]

    async def after_stop() -> list[int]:
        async with _server("a") as (server, client):
            server.sessions["a"].trace.stop("boxoverbound_error")  # type: ignore[attr-defined]
            return [(await _post(client, server, "a", b"{}")).status_code for _ in range(bounds.IN_FLIGHT + 2)]

    handled.clear()
    assert asyncio.run(after_stop()) == [400] * (bounds.IN_FLIGHT + 2) and handled == []  # a stopped rollout's: unread


def test_a_chunked_body_over_the_cap_is_refused_once_it_passes_it(handled: list[int]) -> None:
    bounds.bound_interception()

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(bounds.BODY_CAP // (1 << 20) + 2):
            yield b" " * (1 << 20)

    async def once() -> tuple[int, Any]:
        async with _server("a") as (server, client):
            reply = await client.post(
                f"{server.base_url}{ROUTE}", content=chunks(), headers={"Authorization": "Bearer a"}
            )
            return reply.status_code, server.sessions["a"].trace  # type: ignore[attr-defined]

    status, trace = asyncio.run(once())
    assert status == 413 and handled == [] and trace.stop_condition in AGENT_FAULT_STOPS


def test_requests_past_the_rollout_s_bound_in_flight_are_refused_and_another_rollout_s_pass(handled: list[int]) -> None:
    bounds.bound_interception()

    async def once() -> tuple[list[int], int, Any]:
        async with _server("a", "b") as (server, client):
            server.gate = asyncio.Event()  # type: ignore[attr-defined]
            held = [asyncio.create_task(_post(client, server, "a", b"{}")) for _ in range(bounds.IN_FLIGHT)]
            while len(handled) < bounds.IN_FLIGHT:
                await asyncio.sleep(0.01)
            extra = await _post(client, server, "a", b"{}")
            other = asyncio.create_task(_post(client, server, "b", b"{}"))
            while len(handled) < bounds.IN_FLIGHT + 1:
                await asyncio.sleep(0.01)
            server.gate.set()  # type: ignore[attr-defined]
            statuses = [(await task).status_code for task in held]
            return [extra.status_code, *statuses], (await other).status_code, server.sessions["a"].trace  # type: ignore[attr-defined]

    statuses, other, trace = asyncio.run(once())
    assert statuses == [429] + [200] * bounds.IN_FLIGHT and other == 200 and trace.stop_condition in AGENT_FAULT_STOPS


def test_bodies_past_the_rollout_s_bytes_in_flight_are_refused(handled: list[int]) -> None:
    bounds.bound_interception()
    big = b" " * (bounds.ROLLOUT_BYTES // 2)

    async def once() -> tuple[list[int], int]:
        async with _server("a") as (server, client):
            server.gate = asyncio.Event()  # type: ignore[attr-defined]
            held = [asyncio.create_task(_post(client, server, "a", big)) for _ in range(2)]
            while len(handled) < 2:
                await asyncio.sleep(0.01)
            extra = await _post(client, server, "a", b"{}")
            server.gate.set()  # type: ignore[attr-defined]
            return [(await task).status_code for task in held], extra.status_code

    held, extra = asyncio.run(once())
    assert held == [200, 200] and extra == 429


def test_a_body_that_does_not_arrive_in_time_is_refused(handled: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    bounds.bound_interception()
    monkeypatch.setattr(bounds, "BODY_S", 0.5)

    async def once() -> tuple[bytes, Any]:
        async with _server("a") as (server, _client):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(
                f"POST {ROUTE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nContent-Length: 100\r\n\r\n{{".encode()
            )
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n"), 10)
            writer.close()
            return head, server.sessions["a"].trace  # type: ignore[attr-defined]

    head, trace = asyncio.run(once())
    assert b" 408 " in head and handled == [] and trace.stop_condition in AGENT_FAULT_STOPS


async def _proxy_connections(count: int, box: str = "") -> tuple[list[bytes], bytes]:
    """`count` idle connections to a fresh egress proxy (of box `box`), then one more after the first closed: what
    each of the first `count` got within 1 s (b"" for none), and the late one's answer within 0.5 s."""
    proxy = EgressProxy(NetworkPolicy(NetworkPolicyConfig(allow=[]), []))
    if box:
        proxy.__dict__[bounds.BOX_ATTRIBUTE] = box
    await proxy.start("127.0.0.1")
    opened = []
    try:
        for _ in range(count):
            opened.append(await asyncio.open_connection("127.0.0.1", proxy.port))

        async def answer(reader: asyncio.StreamReader) -> bytes:
            try:
                return await asyncio.wait_for(reader.read(100), 1.0)
            except TimeoutError:
                return b""

        answers = list(
            await asyncio.gather(*(answer(reader) for reader, _ in opened))
        )  # well inside its 10 s head limit
        opened[0][1].close()
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        opened.append((reader, writer))
        try:
            late = await asyncio.wait_for(reader.read(100), 0.5)
        except TimeoutError:
            late = b""
        return answers, late
    finally:
        for _, writer in opened:
            writer.close()
        await proxy.stop()


def test_a_box_s_proxy_holds_at_most_its_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    handle = EgressProxy._handle
    monkeypatch.setattr(EgressProxy, "_handle", getattr(handle, "__wrapped__", handle))
    answers, _ = asyncio.run(_proxy_connections(bounds.CONNECTIONS + 1))
    assert answers == [b""] * (bounds.CONNECTIONS + 1)  # verifiers holds every one open, waiting for its head
    bounds.bound_egress_proxy()
    answers, late = asyncio.run(_proxy_connections(bounds.CONNECTIONS + 1))
    assert answers[:-1] == [b""] * bounds.CONNECTIONS and answers[-1].startswith(b"HTTP/1.1 429 ")
    assert late == b""  # a connection closed frees its place


def test_the_connection_past_the_bound_stops_the_rollout_in_the_proxy_s_box_alone() -> None:
    """A refusal alone left the rollout running: a harness whose own model call met it failed as the platform's."""
    bounds.bound_interception()
    bounds.bound_egress_proxy()

    async def scenario() -> tuple[list[bytes], _Session, _Session]:
        async with InterceptionServer() as server:
            mine, theirs = _Session("mine"), _Session("theirs")
            for session, box in ((mine, "a" * 12), (theirs, "b" * 12)):
                session.trace.agent = SimpleNamespace(runtime=SimpleNamespace(id=box))  # type: ignore[attr-defined]
                server.sessions[session.trace.id] = session  # type: ignore[assignment]
            answers, _ = await _proxy_connections(bounds.CONNECTIONS + 1, box="a" * 64)
            return answers, mine, theirs

    answers, mine, theirs = asyncio.run(scenario())
    assert answers[-1].startswith(b"HTTP/1.1 429 ")
    assert mine.trace.stop_condition in AGENT_FAULT_STOPS and "egress proxy" in mine.trace.info["arena_over_bound"]
    assert theirs.trace.stop_condition is None
    assert "connections" in str(over_bound("a" * 12)) and over_bound("b" * 12) is None
