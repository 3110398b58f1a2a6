"""`arena view`'s local server (aiohttp): the page, its static files, the catalog and one
transcript per request. Binds 127.0.0.1 unless told otherwise, and answers only requests whose
Host is the address it serves (a page elsewhere cannot reach it through DNS rebinding)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from arena.errors import UsageError
from arena.view.load import Catalog
from arena.view.page import SERVED_CSP, served_page, static_file

__all__ = ["build_app", "run_server"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CATALOG: web.AppKey[Catalog] = web.AppKey("catalog", Catalog)
HOSTS: web.AppKey[set[str]] = web.AppKey("hosts", set)
TYPES = {"app.js": "text/javascript", "app.css": "text/css"}


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    hosts = request.app[HOSTS]
    if hosts and request.host not in hosts:
        return web.Response(status=421, text="arena view: unexpected Host header\n")
    response = await handler(request)
    response.headers["Content-Security-Policy"] = SERVED_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def build_app(catalog: Catalog, hosts: set[str] | None = None) -> web.Application:
    """The viewer's app; `hosts` are the Host headers it answers (empty: any)."""
    app = web.Application(middlewares=[_guard])
    app[CATALOG] = catalog
    app[HOSTS] = hosts or set()
    index = json.dumps(catalog.index(), ensure_ascii=False).encode()

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=served_page(), content_type="text/html")

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            body = static_file(name)
        except KeyError:
            raise web.HTTPNotFound() from None
        return web.Response(body=body, content_type=TYPES[name])

    async def catalog_json(_request: web.Request) -> web.Response:
        return web.Response(body=index, content_type="application/json")

    async def episode(request: web.Request) -> web.Response:
        try:
            data: dict[str, Any] = await asyncio.to_thread(
                catalog.transcript, int(request.match_info["run"]), int(request.match_info["episode"]))
        except (UsageError, ValueError):
            raise web.HTTPNotFound() from None
        return web.Response(text=json.dumps(data, ensure_ascii=False), content_type="application/json")

    app.router.add_get("/", page)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/index.json", catalog_json)
    app.router.add_get(r"/api/episode/{run:\d+}/{episode:\d+}.json", episode)
    return app


def run_server(catalog: Catalog, host: str, port: int, announce: Callable[[str], None] = print) -> None:
    """Serve until interrupted; announces the URL once listening (port 0: a free port)."""

    async def main() -> None:
        runner = web.AppRunner(build_app(catalog), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1]
        if host in ("127.0.0.1", "localhost", "::1"):
            runner.app[HOSTS].update(f"{name}:{bound}" for name in ("127.0.0.1", "localhost", "[::1]"))
        announce(f"arena view: http://{'127.0.0.1' if host == '0.0.0.0' else host}:{bound}/ "
                 f"({len(catalog.runs)} run(s), {sum(len(r.episodes) for r in catalog.runs)} episode(s); Ctrl-C stops)")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
