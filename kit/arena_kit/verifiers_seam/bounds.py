"""Per-rollout bounds in the shared eval process: request bodies and requests in flight at the interception
server, connections per box at the egress proxy, and a deadline on a slow body.

Every rollout of an eval shares one process: its interception server (each box's model calls, with the
box's own bearer) and each box's egress proxy (verifiers' `EgressProxy`, the box's only way out). verifiers
0.4.0 bounds neither per rollout: a request body may reach 1 GiB (`MAX_REQUEST_BODY`), any number in
flight, and a proxy takes any number of connections, each waiting up to 300 s per read. One box could grow
the process by gigabytes, or pin it at its open-file limit, and every other rollout failed or slowed.

The bounds (measured sizes in `docs/scoring-and-isolation.md`):
- a request body of at most `BODY_CAP` bytes, received within `BODY_S`;
- at most `IN_FLIGHT` requests of one rollout at once, holding at most `ROLLOUT_BYTES` of bodies;
- at most `CONNECTIONS` open connections through one box's proxy (each pins a descriptor on each side).
A rollout over a bound gets a refusal in its dialect's error shape (413, 408 or 429, naming the bound; the
proxy's a bare 429), and its trace stops with `BoxOverBoundError`'s stop condition (`boxoverbound_error`): the agent's outcome,
scored 0 and never retried (`arena_kit.box.faults`); verifiers then refuses its later requests as a
stopped rollout's. Nothing of another rollout is touched: each count is the rollout's (its bearer) or the
box's (its proxy). The upstream change is `docs/upstream/09-per-rollout-bounds.patch`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "BODY_CAP",
    "BODY_S",
    "BOX_ATTRIBUTE",
    "CONNECTIONS",
    "IN_FLIGHT",
    "ROLLOUT_BYTES",
    "bound_egress_proxy",
    "bound_interception",
    "stop_box_rollout",
]

logger = logging.getLogger(__name__)

BODY_CAP = 8 << 20
"""Bytes of one request body: the largest real request measured is far below (see the isolation docs)."""
ROLLOUT_BYTES = 16 << 20
"""Bytes of the bodies of one rollout's requests in flight at once."""
IN_FLIGHT = 8
"""Requests of one rollout at once: its harness's turn, and the side calls claude_code and codex make."""
BODY_S = 60.0
"""Seconds a request body may take to arrive, once its headers have (the proxy's own header limit is 10 s)."""
CONNECTIONS = 32
"""Connections open at once through one box's egress proxy: the model, tool servers and their streams."""
_COUNTS = "_arena_bounds"
"""The attribute of an interception server holding each rollout's requests and bytes in flight."""


_SERVERS: weakref.WeakSet[Any] = weakref.WeakSet()
"""verifiers' interception servers of this process that serve a dialect (`bound_interception`)."""


def _stop(session: Any, bound: str) -> str:
    """Stop `session`'s rollout as the agent's fault for going over `bound`: the error's words."""
    from verifiers.v1.errors import stop_condition

    from arena_kit.errors import BoxOverBoundError

    error = BoxOverBoundError(f"the rollout went over a bound of the shared eval process: {bound}")
    logger.warning("rollout %s: %s", session.trace.id, error)
    session.trace.info.setdefault("arena_over_bound", str(error))
    session.trace.stop(stop_condition(error))
    return str(error)


def _over(session: Any, dialect: Any, status: int, bound: str) -> Any:
    """The refusal of a request over `bound`, and the rollout stopped as the agent's fault."""
    from aiohttp import web

    return web.json_response(dialect.error_body(_stop(session, bound)), status=status)


def stop_box_rollout(box: str, bound: str) -> bool:
    """Stop the rollout whose box is `box` (its container id) as the agent's fault for going over `bound`, and
    record the box so (`arena_kit.box.faults.mark_over_bound`): on the event loop of this process's
    interception servers. Whether a running rollout of theirs was in that box (its trace's runtime)."""
    from arena_kit.box.faults import BOX_ID, mark_over_bound

    mark_over_bound(box, bound)
    found = False
    for server in list(_SERVERS):
        for session in list(server.sessions.values()):
            runtime = getattr(getattr(session.trace, "agent", None), "runtime", None)
            if box and getattr(runtime, "id", None) == box[:BOX_ID] and not session.stopped:
                _stop(session, bound)
                found = True
    return found


def bounded(server: Any, dialect: Any, handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    """`handler` (a dialect route of `server`) behind the rollout's bounds; a request no rollout's bearer
    names goes to `handler` as it is (it answers 401 without reading the body)."""
    from aiohttp import web

    @functools.wraps(handler)
    async def handle(request: web.Request) -> Any:
        secret = dialect.secret(request.headers)
        session = server.sessions.get(secret)
        if session is None:
            return await handler(request)
        if session.stopped:  # verifiers refuses it too, after reading its body: here, unread
            return web.json_response(dialect.error_body(f"rollout stopped: {session.trace.stop_condition}"), status=400)
        counts: dict[str, list[int]] = server.__dict__.setdefault(_COUNTS, {})
        requests, held = counts.setdefault(secret, [0, 0])
        size = request.content_length
        if size is not None and size > BODY_CAP:
            return _over(session, dialect, 413, f"a request body of {size} bytes (at most {BODY_CAP})")
        if requests >= IN_FLIGHT:
            return _over(session, dialect, 429, f"more than {IN_FLIGHT} requests at once")
        reserved = BODY_CAP if size is None else size
        if held + reserved > ROLLOUT_BYTES:
            return _over(session, dialect, 429, f"more than {ROLLOUT_BYTES} bytes of request bodies at once")
        counts[secret][0] += 1
        counts[secret][1] += reserved
        try:
            try:
                await asyncio.wait_for(request.read(), BODY_S)  # aiohttp keeps it: the handler's read returns it
            except TimeoutError:
                return _over(session, dialect, 408, f"a request body not received within {BODY_S:g} s")
            except web.HTTPRequestEntityTooLarge:
                return _over(session, dialect, 413, f"a request body of more than {BODY_CAP} bytes")
            return await handler(request)
        finally:
            counts[secret][0] -= 1
            counts[secret][1] -= reserved
            if counts[secret][0] == 0:
                counts.pop(secret, None)

    return handle


def bound_interception() -> None:
    """Put every dialect route of verifiers' interception servers behind the rollout's bounds (`bounded`)
    and cap every body of theirs (the tool gate's too) at `BODY_CAP`. Once per process.

    Raises:
        SeamError: verifiers' server has no `MAX_REQUEST_BODY`, `_handler_for` or `_aux_handler_for`.
    """
    from verifiers.v1.interception import server as module

    from arena_kit.errors import SeamError

    cls = module.InterceptionServer
    if getattr(cls._handler_for, "__arena_seam__", False):
        return
    if (
        not hasattr(module, "MAX_REQUEST_BODY")
        or not hasattr(cls, "_handler_for")
        or not hasattr(cls, "_aux_handler_for")
    ):
        raise SeamError(
            "verifiers' interception server moved MAX_REQUEST_BODY, _handler_for or _aux_handler_for: "
            "the per-rollout bounds (arena_kit.verifiers_seam.bounds) cannot install; re-read interception/server.py"
        )
    module.MAX_REQUEST_BODY = BODY_CAP  # read by `start` for the app's `client_max_size`
    handler_for, aux_handler_for = cls._handler_for, cls._aux_handler_for

    def _handler_for(self: Any, dialect: Any) -> Any:
        _SERVERS.add(self)
        return bounded(self, dialect, handler_for(self, dialect))

    def _aux_handler_for(self: Any, dialect: Any, route: str) -> Any:
        return bounded(self, dialect, aux_handler_for(self, dialect, route))

    patches: tuple[tuple[str, Any, Any], ...] = (
        ("_handler_for", _handler_for, handler_for),
        ("_aux_handler_for", _aux_handler_for, aux_handler_for),
    )
    for name, patched, original in patches:
        patched.__arena_seam__ = True
        patched.__wrapped__ = original
        setattr(cls, name, patched)


REFUSED = b"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
BOX_ATTRIBUTE = "_arena_box"
"""The attribute of an egress proxy naming its box's container id (set by the runtime that serves it)."""


def bound_egress_proxy() -> None:
    """Let each of verifiers' egress proxies (one per box) hold at most `CONNECTIONS` connections at once;
    one more is answered 429 and closed at once, and the rollout in the proxy's box (`BOX_ATTRIBUTE`) is
    stopped as the agent's fault (`stop_box_rollout`), like a rollout over a bound of the interception
    server: no honest harness comes near the bound (the isolation docs), and a harness whose own model call
    met it would otherwise fail as the platform's. Once per process.

    Raises:
        SeamError: verifiers' `EgressProxy` has no `_handle`.
    """
    from verifiers.v1.runtimes.docker import egress

    from arena_kit.errors import SeamError

    cls = egress.EgressProxy
    original = getattr(cls, "_handle", None)
    if original is None:
        raise SeamError(
            "verifiers' EgressProxy has no _handle: its connection bound (arena_kit.verifiers_seam.bounds) cannot install"
        )
    if getattr(original, "__arena_seam__", False):
        return

    async def _handle(self: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        open_now = self.__dict__.get("_arena_connections", 0)
        if open_now >= CONNECTIONS:
            box = self.__dict__.get(BOX_ATTRIBUTE)
            if box and not self.__dict__.get("_arena_over"):
                self.__dict__["_arena_over"] = True
                stop_box_rollout(box, f"more than {CONNECTIONS} connections at once through its egress proxy")
            try:
                writer.write(REFUSED)
                await asyncio.wait_for(writer.drain(), 5)
            except (OSError, TimeoutError):
                pass
            finally:
                writer.close()
            return
        self.__dict__["_arena_connections"] = open_now + 1
        try:
            await original(self, reader, writer)
        finally:
            self.__dict__["_arena_connections"] -= 1

    _handle.__arena_seam__ = True  # type: ignore[attr-defined]
    _handle.__wrapped__ = original  # type: ignore[attr-defined]
    cls._handle = _handle
