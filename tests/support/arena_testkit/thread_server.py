"""Serve an aiohttp app on 127.0.0.1 from a thread with its own event loop, closed on exit."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

from aiohttp import web

STOP_TIMEOUT_S = 10.0


@contextlib.contextmanager
def serve_in_thread(app: web.Application, start_deadline_s: float = 90.0) -> Iterator[str]:
    """Yield the base URL (`http://127.0.0.1:<port>`) of `app`, served until the block ends. On exit
    the runner is cleaned up, the loop stopped, the thread joined and the loop closed: an event loop
    left open is finalised by whichever later test runs the gc (an unraisable error under pytest).

    Raises:
        RuntimeError: the server did not listen within `start_deadline_s` (its error, if it failed).
    """
    runner = web.AppRunner(app, access_log=None)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    url: list[str] = []
    failed: list[BaseException] = []

    async def start() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url.append(f"http://127.0.0.1:{runner.addresses[0][1]}")

    def serve() -> None:
        try:
            loop.run_until_complete(start())
        except BaseException as e:  # reported by the caller, which is waiting on `ready`
            failed.append(e)
            return
        finally:
            ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        if not ready.wait(start_deadline_s) or failed:
            raise RuntimeError(f"the test server did not start within {start_deadline_s:.0f} s: {failed[:1]}")
        yield url[0]
    finally:
        if thread.is_alive() and not failed:
            with contextlib.suppress(RuntimeError):  # the loop stopped already
                asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(STOP_TIMEOUT_S)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(STOP_TIMEOUT_S)
        if not thread.is_alive():
            loop.close()


__all__ = ["serve_in_thread"]
