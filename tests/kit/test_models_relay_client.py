"""verifiers' interception server relays `/v1/models` through one HTTP client per server once Arena's
seam replaces its handler (`arena_kit.verifiers_seam.interception`): the same answers, one client
(verifiers opens one, and a TLS context, per request), closed with the server."""

from __future__ import annotations

import asyncio
import json
import socket
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from aiohttp import web
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.interception.server import InterceptionServer

from arena_kit.verifiers_seam import interception

LISTING = {"object": "list", "data": [{"id": "arena/m", "object": "model", "max_model_len": 4096}]}


class _Session:
    """What the handler reads of a rollout's session: its trace id, its endpoint, `adopt`."""

    def __init__(self, base_url: str) -> None:
        self.trace = SimpleNamespace(id="trace-1")
        self.ctx = SimpleNamespace(client=EvalClientConfig(base_url=base_url, api_key_var="ARENA_TEST_KEY"))

    def adopt(self, task: Any) -> None:
        pass


async def _listings(count: int) -> tuple[list[tuple[int, Any]], list[httpx.AsyncClient]]:
    """`count` listings through a started interception server to a local upstream: their (status,
    body), and every httpx client made meanwhile (the test's own one aside)."""
    seen_auth: list[str] = []

    async def models(request: web.Request) -> web.Response:
        seen_auth.append(request.headers.get("Authorization", ""))
        return web.json_response(LISTING)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    upstream = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
    made: list[httpx.AsyncClient] = []
    init = httpx.AsyncClient.__init__

    def counted(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        init(self, *args, **kwargs)

    answers = []
    try:
        async with httpx.AsyncClient() as caller:
            async with InterceptionServer() as server:
                server.sessions["rollout-secret"] = _Session(upstream)  # type: ignore[assignment]
                httpx.AsyncClient.__init__ = counted  # type: ignore[method-assign]
                try:
                    for _ in range(count):
                        reply = await caller.get(
                            f"{server.base_url}/v1/models", headers={"Authorization": "Bearer rollout-secret"}
                        )
                        answers.append((reply.status_code, reply.json()))
                    denied = await caller.get(f"{server.base_url}/v1/models", headers={"Authorization": "Bearer wrong"})
                    answers.append((denied.status_code, denied.json()))
                finally:
                    httpx.AsyncClient.__init__ = init  # type: ignore[method-assign]
    finally:
        await runner.cleanup()
    assert seen_auth == ["Bearer arena-test-key"] * count
    return answers, made


@pytest.fixture
def handler_as_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TEST_KEY", "arena-test-key")
    # verifiers' own handler, even where an earlier test in this process installed the seam; undone after the test
    handler = InterceptionServer.handle_models
    monkeypatch.setattr(InterceptionServer, "handle_models", getattr(handler, "__wrapped__", handler))


def test_verifiers_opens_a_client_per_listing_where_the_seam_keeps_one_per_server(handler_as_read: None) -> None:
    unpatched, made_unpatched = asyncio.run(_listings(3))
    assert len(made_unpatched) == 3  # what the seam removes: one client per /v1/models

    assert interception.share_models_client() is True
    patched, made = asyncio.run(_listings(3))
    assert patched == unpatched == [(200, LISTING)] * 3 + [(401, {"error": "unauthorized"})]
    assert len(made) == 1 and made[0].is_closed, "one listing client, closed with its server"


def test_the_seam_leaves_a_handler_it_did_not_read(handler_as_read: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interception, "HANDLE_MODELS_SHA256", "0" * 64)
    before = InterceptionServer.handle_models
    assert interception.share_models_client() is False
    assert InterceptionServer.handle_models is before


def test_an_unreachable_upstream_is_a_502_not_a_crash(handler_as_read: None) -> None:
    assert interception.share_models_client() is True

    with socket.socket() as closed:  # a port this test held and let go: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    async def listing() -> tuple[int, Any]:
        async with httpx.AsyncClient() as caller, InterceptionServer() as server:
            server.sessions["s"] = _Session(f"http://127.0.0.1:{port}/v1")  # type: ignore[assignment]
            reply = await caller.get(f"{server.base_url}/v1/models", headers={"Authorization": "Bearer s"})
            return reply.status_code, reply.json()

    status, body = asyncio.run(listing())
    assert status == 502 and json.dumps(body)
