"""The embedded "model": an aiohttp server that answers every dialect with a deterministic policy.

Each request's model name picks a policy (`arena.policies.PolicyResolver`); the dialect turns the
body into an `Observation`, the policy picks an `Action`, and the dialect renders it back, as SSE
when the client streams. Every failure is answered in the dialect's own error shape, so a bad
request never takes the server down. Policies run on the server's event loop: keep them quick.
A server started with `latency` holds every turn that many seconds before it answers (asleep on
the event loop: concurrent turns overlap and cost no CPU), to stand in for a real model's latency.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType

from aiohttp import web

from arena.dialects import DIALECTS, Dialect
from arena.dialects.anthropic import count_tokens
from arena.dialects.base import Parsed, Reply, RequestError, estimate_tokens, plan
from arena.errors import PolicyLoadError, UnknownPolicy
from arena.policies import PolicyResolver
from arena_kit.policy import Policy

__all__ = ["MAX_BODY_BYTES", "ServerHandle", "build_app", "serve", "start_in_thread"]

MAX_BODY_BYTES = 32 * 1024 * 1024
CONTEXT_WINDOW = 200_000
"""Advertised on `/v1/models` for harnesses that size compaction from it."""

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def build_app(
    resolver: PolicyResolver, *, max_body_bytes: int = MAX_BODY_BYTES, latency: float = 0.0
) -> web.Application:
    """The server's routes, with and without the `/v1` prefix; each turn waits `latency` seconds first.

    Raises:
        ValueError: `latency` is negative.
    """
    if latency < 0:
        raise ValueError(f"model latency must be seconds ≥ 0, got {latency}")
    handlers = _Handlers(resolver, max_body_bytes, latency)
    app = web.Application(client_max_size=max_body_bytes)
    for prefix in ("/v1", ""):
        app.router.add_post(f"{prefix}/chat/completions", handlers.turn(DIALECTS["chat"]))
        app.router.add_post(f"{prefix}/responses", handlers.turn(DIALECTS["responses"]))
        app.router.add_post(f"{prefix}/messages", handlers.turn(DIALECTS["anthropic"]))
        app.router.add_post(f"{prefix}/messages/count_tokens", handlers.count_tokens)
        app.router.add_get(f"{prefix}/models", handlers.models)
    return app


class _Handlers:
    def __init__(self, resolver: PolicyResolver, max_body_bytes: int, latency: float = 0.0):
        self.resolver = resolver
        self.max_body_bytes = max_body_bytes
        self.latency = latency

    def turn(self, dialect: Dialect) -> Handler:
        """The handler for one dialect's turn route: parse, ask the policy, render."""

        async def handle(request: web.Request) -> web.StreamResponse:
            model = "?"
            try:
                raw, body = await self._decode(request)
                model = str(body.get("model", "?"))
                parsed = _parse(dialect, raw, body)
                reply = self._decide(parsed, dialect)
            except RequestError as error:
                logger.warning("%s model=%s error %d: %s", dialect.name, model, error.status, error.message)
                return _error_response(dialect, error)
            if self.latency:
                await asyncio.sleep(self.latency)
            logger.info("%s model=%s stream=%s action=%s", dialect.name, model, parsed.stream, reply.summary())
            if not parsed.stream:
                return web.json_response(dialect.render(reply, parsed))
            return await _send_events(request, dialect.stream(reply, parsed))

        return handle

    async def count_tokens(self, request: web.Request) -> web.Response:
        dialect = DIALECTS["anthropic"]
        try:
            raw, body = await self._decode(request)
            parsed = _parse(dialect, raw, body)
        except RequestError as error:
            logger.warning("anthropic count_tokens error %d: %s", error.status, error.message)
            return _error_response(dialect, error)
        logger.info("anthropic model=%s count_tokens=%d", parsed.model, parsed.input_tokens)
        return web.json_response(count_tokens(parsed))

    async def models(self, request: web.Request) -> web.Response:
        # One list readable by both SDKs: OpenAI's `object`/`owned_by`, Anthropic's `type`/`display_name`.
        cards = [
            {
                "id": name,
                "object": "model",
                "type": "model",
                "created": 0,
                "created_at": "1970-01-01T00:00:00Z",
                "owned_by": "arena",
                "display_name": name,
                "context_length": CONTEXT_WINDOW,
                "max_model_len": CONTEXT_WINDOW,
            }
            for name in self.resolver.available()
        ]
        first, last = (cards[0]["id"], cards[-1]["id"]) if cards else (None, None)
        return web.json_response(
            {"object": "list", "data": cards, "has_more": False, "first_id": first, "last_id": last}
        )

    async def _decode(self, request: web.Request) -> tuple[bytes, dict]:
        raw = await _read_body(request, self.max_body_bytes)
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RequestError(400, f"request body is not valid JSON: {e}", code="invalid_json") from None
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object", code="invalid_type")
        return raw, body

    def _decide(self, parsed: Parsed, dialect: Dialect) -> Reply:
        try:
            policy = self.resolver.resolve(parsed.model)
        except UnknownPolicy as e:
            raise RequestError(404, str(e), param="model", code="model_not_found") from None
        except PolicyLoadError as e:
            logger.exception("policy load failed for model %s", parsed.model)
            raise RequestError(500, str(e)) from None
        try:
            return plan(policy(parsed.observation), parsed, dialect.shell)
        except Exception as e:
            logger.exception("policy for model %s raised", parsed.model)
            raise RequestError(
                500, f"policy {parsed.model!r} failed ({type(e).__name__}); see the arena server log"
            ) from None


def _error_response(dialect: Dialect, error: RequestError) -> web.Response:
    response = web.json_response(dialect.error_body(error), status=error.status)
    if error.status == 413:
        response.force_close()  # the client may still be sending the rest of its body
    return response


def _parse(dialect: Dialect, raw: bytes, body: dict) -> Parsed:
    seed = hashlib.sha256(raw).hexdigest()
    return dialect.parse(body, seed, estimate_tokens(raw.decode("utf-8", "replace")))


async def _read_body(request: web.Request, limit: int) -> bytes:
    """The body, or a 413 once it passes `limit` (the app's `client_max_size`)."""
    too_large = RequestError(413, f"request body exceeds {limit} bytes", code="request_too_large")
    if request.content_length is not None and request.content_length > limit:
        # Drain (bounded) before answering: a client still writing its body misses an early reply.
        drained = 0
        while drained <= 4 * limit and (chunk := await request.content.readany()):
            drained += len(chunk)
        raise too_large
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large from None


async def _send_events(request: web.Request, events: list[bytes]) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    for event in events:
        await response.write(event)
    await response.write_eof()
    return response


def serve(host: str = "127.0.0.1", port: int = 8765, policies: Mapping[str, Policy] | None = None) -> None:
    """Run the server in the foreground until interrupted."""
    logger.info("arena model server on http://%s:%d", host, port)
    web.run_app(build_app(PolicyResolver(policies)), host=host, port=port, access_log=None, print=None)


class ServerHandle:
    """A server running on its own event loop in a daemon thread; stop it or use it as a context manager."""

    def __init__(self, loop: asyncio.AbstractEventLoop, runner: web.AppRunner, thread: threading.Thread, url: str):
        self._loop, self._runner, self._thread = loop, runner, thread
        self.url = url
        """Base URL without `/v1`, e.g. `http://127.0.0.1:40123`."""

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down and join the thread; idempotent."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def start_in_thread(
    host: str = "127.0.0.1",
    port: int = 0,
    policies: Mapping[str, Policy] | None = None,
    *,
    resolver: PolicyResolver | None = None,
    timeout: float = 10.0,
    latency: float = 0.0,
) -> ServerHandle:
    """Start the server in a background thread and return once it accepts connections.

    `policies` adds (or overrides) model names; pass `resolver` instead to control entry-point
    discovery. Port 0 picks a free port (see `ServerHandle.url`). `latency`: seconds every turn
    waits before its answer.

    Raises:
        ValueError: `latency` is negative.
        OSError: the address could not be bound.
        TimeoutError: the server did not start within `timeout` seconds.
    """
    app = build_app(resolver or PolicyResolver(policies), latency=latency)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    outcome: dict[str, object] = {}

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        outcome["port"] = runner.addresses[0][1]

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as e:  # reported to the caller, who re-raises it
            outcome["error"] = e
            started.set()
            loop.run_until_complete(runner.cleanup())
            loop.close()
            return
        started.set()
        try:
            loop.run_forever()
        finally:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=run, name="arena-model-server", daemon=True)
    thread.start()
    if not started.wait(timeout):
        raise TimeoutError(f"arena model server did not start on {host}:{port} within {timeout} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return ServerHandle(loop, runner, thread, f"http://{host}:{outcome['port']}")
