"""verifiers' MCP server internals a toolset needs: the calling rollout's state route, a call's bound state, and
a hook around each synced call (pull → call → push) for a per-rollout lock."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import verifiers.v1 as vf
from verifiers.v1.mcp import server as vf_server

from arena_kit.errors import SeamError

__all__ = ["HookedToolset", "bound_state", "state_route"]

ConfigT = TypeVar("ConfigT")
StateT = TypeVar("StateT")

for _name in ("_with_state", "_state_channel"):
    if not callable(getattr(vf.Toolset, _name, None)):
        raise SeamError(
            f"verifiers' Toolset has no {_name}: arena_kit.verifiers_seam.toolset hooks it; "
            "re-read verifiers' mcp/server.py and update the seam"
        )


def state_route() -> str | None:
    """The signed state route of the rollout whose call is being served (None: none given)."""
    route: str | None = vf_server._request_query(vf_server.STATE_ROUTE_PARAM)
    return route


@contextlib.contextmanager
def bound_state(state: Any) -> Iterator[None]:
    """Serve tool calls in this context as if verifiers had pulled `state` for them (a bench's direct calls)."""
    token = vf_server._call_state.set(state)
    try:
        yield
    finally:
        vf_server._call_state.reset(token)


@dataclass
class _Raised:
    error: BaseException


class HookedToolset(vf.Toolset[ConfigT, StateT], Generic[ConfigT, StateT]):  # type: ignore[misc]  # verifiers ships no types
    """verifiers' Toolset whose every synced call (pull → call → push) runs inside `around_call()`, after
    verifiers has checked the call's state coordinates (forged ones are refused before the hook runs)."""

    RAISED_AFTER_PUSH: ClassVar[tuple[type[BaseException], ...]] = ()
    """Errors a tool raises only after verifiers pushed the state the call left (a tool error that charged
    budget); any other error leaves the rollout's state as verifiers last pulled it."""

    def around_call(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The context each synced call runs in (default: none)."""
        return _nothing()

    def _with_state(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        raised_after_push = self.RAISED_AFTER_PUSH

        @functools.wraps(fn)
        async def capture(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except raised_after_push as error:
                return _Raised(error)

        synced = super()._with_state(capture if raised_after_push else fn)

        @functools.wraps(fn)
        async def hooked(*args: Any, **kwargs: Any) -> Any:
            self._state_channel()  # refuses forged coordinates before the hook sees them
            async with self.around_call():
                result = await synced(*args, **kwargs)
            if isinstance(result, _Raised):
                raise result.error
            return result

        hooked.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        return hooked


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield
