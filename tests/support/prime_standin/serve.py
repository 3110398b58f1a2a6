"""Run a stand-in on loopback in a thread and point the Prime SDK at it through its environment."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

from prime_standin import engine
from prime_standin.app import StandInApp
from prime_standin.boxes import Boxes

API_KEY = "prime-standin-dummy-key"
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class StandIn:
    url: str
    """The API base (what `PRIME_API_BASE_URL` is set to)."""
    boxes: Boxes
    """The live record: sandboxes by id and every call made (read it after the client is done)."""

    @property
    def env(self) -> dict[str, str]:
        """The variables that send prime-sandboxes (and verifiers' prime runtime) here."""
        return {"PRIME_API_BASE_URL": self.url, "PRIME_API_KEY": API_KEY}


@contextlib.contextmanager
def running(batch_status: bool = True) -> Iterator[StandIn]:
    """A stand-in on 127.0.0.1; on exit the server stops and every box it started is removed.
    `batch_status=False` drops the two batchGet routes, to exercise the SDK's one-by-one fallbacks.

    Raises:
        TimeoutError: the server did not start within START_TIMEOUT_S.
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    boxes = Boxes(session=engine.new_id())
    app = StandInApp(boxes, API_KEY, gateway_url=f"{url}/gateway", batch_status=batch_status)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False))
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[sock])), name="prime-standin", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise TimeoutError(f"prime stand-in did not start on {url} within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.02)
        yield StandIn(url, boxes)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        engine.remove_session_boxes(boxes.session)
