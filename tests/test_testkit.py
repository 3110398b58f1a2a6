"""The shared test helpers (tests/support/arena_testkit) leave nothing running behind them."""

import asyncio
import urllib.request

from aiohttp import web

from arena_testkit import thread_server
from arena_testkit.mcp_session import state_channel
from arena_testkit.thread_server import serve_in_thread


def _hello() -> web.Application:
    async def hello(_request: web.Request) -> web.Response:
        return web.Response(text="hi")

    app = web.Application()
    app.router.add_get("/", hello)
    return app


def test_a_thread_served_app_answers_and_its_loop_is_closed_after(monkeypatch):
    loops: list[asyncio.AbstractEventLoop] = []
    real = asyncio.new_event_loop
    monkeypatch.setattr(thread_server.asyncio, "new_event_loop", lambda: loops.append(real()) or loops[-1])
    with serve_in_thread(_hello()) as url, urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.read() == b"hi"
    [loop] = loops
    assert loop.is_closed(), "the server's event loop was left for the gc to finalise"


def test_the_state_channel_serves_on_a_loop_it_closes(monkeypatch):
    loops: list[asyncio.AbstractEventLoop] = []
    real = asyncio.new_event_loop
    monkeypatch.setattr(thread_server.asyncio, "new_event_loop", lambda: loops.append(real()) or loops[-1])
    with state_channel() as channel:
        assert channel.url.startswith("http://127.0.0.1:") and channel.url.endswith("/state")
    assert [loop.is_closed() for loop in loops] == [True]
