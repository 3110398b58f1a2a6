"""`arena view`'s local server (aiohttp): the page, its static files, and the catalog's data as JSON,
kept current by a background task that follows the runs every `FOLLOW_S` (the page polls the
catalog's generation and fetches what changed). Binds 127.0.0.1 unless told otherwise, and answers
only requests whose Host is the address it serves (a page elsewhere cannot reach it through DNS
rebinding)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from arena.errors import UsageError
from arena.view.catalog import Catalog
from arena.view.page import SERVED_CSP, content_type, served_page, static_file, to_json
from arena.view.search import MAX_QUERY

__all__ = ["FOLLOW_S", "HOSTS", "build_app", "run_server"]

FOLLOW_S = 0.5
"""How often the server reads what the runs appended and looks for new run directories."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CATALOG: web.AppKey[Catalog] = web.AppKey("catalog", Catalog)
HOSTS: web.AppKey[set[str]] = web.AppKey("hosts", set)
logger = logging.getLogger(__name__)


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    hosts = request.app[HOSTS]
    if hosts and request.host not in hosts:
        return web.Response(status=421, text="arena view: unexpected Host header\n")
    try:
        response = await handler(request)
    except UsageError as exc:
        response = _json({"error": str(exc)}, status=404)
    except (ValueError, KeyError) as exc:
        response = _json({"error": f"bad request: {exc}"}, status=400)
    response.headers["Content-Security-Policy"] = SERVED_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _json(value: Any, status: int = 200) -> web.Response:
    return web.Response(text=to_json(value), status=status, content_type="application/json")


def build_app(catalog: Catalog, hosts: set[str] | None = None, follow: bool = True) -> web.Application:
    """The viewer's app; `hosts` are the Host headers it answers (empty: any); `follow` keeps the
    catalog current while it runs."""
    app = web.Application(middlewares=[_guard])
    app[CATALOG] = catalog
    app[HOSTS] = hosts or set()

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=served_page(), content_type="text/html")

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            body = static_file(name)
        except KeyError:
            raise web.HTTPNotFound() from None
        return web.Response(body=body, headers={"Content-Type": content_type(name)})

    async def index(_request: web.Request) -> web.Response:
        return _json(await asyncio.to_thread(catalog.index))

    async def generation(_request: web.Request) -> web.Response:
        return _json({"generation": catalog.generation})

    async def run(request: web.Request) -> web.Response:
        start = int(request.query.get("start", "0"))
        return _json(await asyncio.to_thread(catalog.rows, request.query["run"], max(start, 0)))

    async def episode(request: web.Request) -> web.Response:
        return _json(await asyncio.to_thread(catalog.episode, request.query["run"], int(request.query["i"])))

    async def raw(request: web.Request) -> web.Response:
        body = await asyncio.to_thread(catalog.raw, request.query["run"], int(request.query["i"]))
        return web.Response(body=body, headers={"Content-Type": "text/plain; charset=utf-8"})

    async def search(request: web.Request) -> web.Response:
        query = request.query["q"][:MAX_QUERY]
        return _json({"query": query, "hits": await asyncio.to_thread(catalog.search, request.query["run"], query)})

    async def pairs(request: web.Request) -> web.Response:
        ids = [rid for rid in request.query["runs"].split(",") if rid]
        return _json({"pairs": await asyncio.to_thread(catalog.pairs, ids)})

    async def log(request: web.Request) -> web.StreamResponse:
        logs = catalog.run(request.query["run"]).logs()
        n = int(request.query["n"])
        if not 0 <= n < len(logs):
            raise UsageError(f"no log {n} for run {request.query['run']}")
        return web.FileResponse(Path(logs[n]["path"]), headers={"Content-Type": "text/plain; charset=utf-8"})

    app.router.add_get("/", page)
    app.router.add_get("/static/{name:.+}", static)
    for route, handler in (
        ("index", index),
        ("generation", generation),
        ("run", run),
        ("episode", episode),
        ("search", search),
        ("pairs", pairs),
    ):
        app.router.add_get(f"/api/{route}.json", handler)
    app.router.add_get("/api/raw", raw)
    app.router.add_get("/api/log", log)
    if follow:
        app.cleanup_ctx.append(_follow)
    return app


async def _follow(app: web.Application) -> AsyncIterator[None]:
    """Keep the catalog current while the app runs."""
    catalog = app[CATALOG]

    async def loop() -> None:
        while True:
            await asyncio.sleep(FOLLOW_S)
            try:
                await asyncio.to_thread(catalog.refresh)
            except Exception:  # a bug must not stop the following; it is logged and retried
                logger.exception("arena view: refreshing the runs failed")

    task = asyncio.create_task(loop())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def run_server(catalog: Catalog, host: str, port: int, announce: Callable[[str], None] = print) -> None:
    """Serve until interrupted; announces the URL once listening (port 0: a free port)."""

    async def main() -> None:
        runner = web.AppRunner(build_app(catalog), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            bound = runner.addresses[0][1]
            if host in ("127.0.0.1", "localhost", "::1"):
                runner.app[HOSTS].update(f"{name}:{bound}" for name in ("127.0.0.1", "localhost", "[::1]"))
            episodes = sum(len(r.rows) for r in catalog.runs.values())
            announce(
                f"arena view: http://{'127.0.0.1' if host == '0.0.0.0' else host}:{bound}/ "
                f"({len(catalog.runs)} run(s), {episodes} episode(s); following them as they grow; Ctrl-C stops)"
            )
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
