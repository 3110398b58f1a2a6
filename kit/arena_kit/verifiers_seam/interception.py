"""A run-time replacement in verifiers' interception server: one HTTP client for its `/v1/models` relay.

verifiers 0.4.0 opens a new `httpx.AsyncClient` for every `GET /v1/models` a harness sends (arena-bash
and verifiers' bash harness ask once per rollout, to size compaction), and a new client builds a new
TLS context with the CA bundle loaded: about 0.03 CPU-s on vf-eval's event loop per rollout, for a
listing. The replacement is the same relay through one client per server, opened at its first
listing and closed with the server, as the server's model clients are. The upstream change is
`docs/upstream/07-models-relay-client.patch`.
"""

from __future__ import annotations

from typing import Any

from arena_kit.verifiers_seam.launch import source_digest

__all__ = ["HANDLE_MODELS_SHA256", "MODELS_CLIENT", "share_models_client"]

HANDLE_MODELS_SHA256 = "42cbbbf6852016bbcd64b18893f6d123759e8e1edf18d93e214714ec41d67983"
"""sha256 of `inspect.getsource(verifiers.v1.interception.server.InterceptionServer.handle_models)` on 0.4.0."""
MODELS_CLIENT = "_arena_models_client"
"""The attribute of a server that holds its one listing client."""


def share_models_client() -> bool:
    """Make every interception server relay `/v1/models` through one client of its own (False: not
    replaced, when `handle_models` is not the code read)."""
    import asyncio

    import httpx
    from aiohttp import web
    from verifiers.v1.clients.base import join_url
    from verifiers.v1.configs.client import resolve_api_key, resolve_headers
    from verifiers.v1.dialects import DIALECTS
    from verifiers.v1.interception import server

    cls = server.InterceptionServer
    if getattr(cls.handle_models, "__arena_seam__", False):
        return True
    if source_digest(cls.handle_models) != HANDLE_MODELS_SHA256:
        return False

    def listing_client(self: Any) -> httpx.AsyncClient:
        client = getattr(self, MODELS_CLIENT, None)
        if client is None:
            # verifiers' own timeouts for this relay: a hung provider must not stall the rollout.
            client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))
            setattr(self, MODELS_CLIENT, client)
            self.stack.push_async_callback(client.aclose)
        return client

    async def handle_models(self: Any, request: web.Request) -> web.Response:
        # verifiers' handler as read, with `listing_client(self)` for its per-request client.
        for dialect in DIALECTS:
            session = self.sessions.get(dialect.secret(request.headers))
            if session is not None:
                break
        else:
            return web.json_response({"error": "unauthorized"}, status=401)
        session.adopt(asyncio.current_task())
        server.logger.debug("intercept models: id=%s", session.trace.id)
        config = session.ctx.client
        headers = httpx.Headers(resolve_headers(config))
        headers.update(dialect.auth_headers(resolve_api_key(config)))
        try:
            upstream = await listing_client(self).get(join_url(config.base_url, "/v1/models"), headers=headers)
        except httpx.HTTPError as e:
            server.logger.warning("models call failed: id=%s %s", session.trace.id, e)
            return web.json_response(dialect.error_body(str(e)), status=502)
        return web.Response(body=upstream.content, status=upstream.status_code, content_type="application/json")

    handle_models.__arena_seam__ = True  # type: ignore[attr-defined]
    handle_models.__wrapped__ = cls.handle_models  # type: ignore[attr-defined]  # verifiers' own, for tests
    cls.handle_models = handle_models
    return True
