"""A verifiers Toolset base whose tool calls run one at a time per rollout and whose bad arguments are refused.

verifiers syncs `trace.state` around each call as pull → call → push, and says concurrent writes
are last-write-wins: two parallel calls of one rollout would both see the same budget and both
spend it. `SerialToolset` holds a per-rollout lock across the whole pull/call/push, keyed by the
rollout's state route (shared servers) or state URL (per-task servers). Calls of different
rollouts still run concurrently. A lock exists only while a call of an authenticated rollout holds
or waits for it, so forged or finished rollouts leave nothing behind.

The MCP SDK validates arguments with a pydantic model that silently drops unknown keys and words
its refusals as pydantic dumps. A server middleware checks each `tools/call` first, with the SDK's
own argument model, and refuses an unknown or invalid argument in words before any state is
pulled, so a refusal never runs the tool and never costs budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError
from verifiers.v1.utils.decorators import discover_decorated

from arena_kit.verifiers_seam.toolset import HookedToolset, state_route

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = ["SerialToolset", "argument_refusal", "rollout_key"]

_SHOWN_CHARS = 40
ConfigT = TypeVar("ConfigT")
StateT = TypeVar("StateT")
"""Our own type variables: verifiers ships no types, so its `ConfigT`/`StateT` are opaque to mypy."""


def rollout_key() -> str:
    """The identity of the calling rollout, from the request's signed state coordinates."""
    route = state_route()
    return route or os.environ.get("VF_STATE_URL", "") or "-"


def argument_refusal(tool: str, metadata: FuncMetadata, arguments: Mapping[str, Any]) -> str | None:
    """Why `arguments` cannot be passed to `tool` (one sentence for the model), or None if they can."""
    fields = metadata.arg_model.model_fields
    names = [f.alias or name for name, f in fields.items()]
    takes = f"{tool} takes {', '.join(names)}" if names else f"{tool} takes no arguments"
    unknown = [key for key in arguments if key not in names]
    if unknown:
        return (
            f"unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k[:_SHOWN_CHARS]) for k in unknown)}; {takes}. Nothing was run or charged."
        )
    try:
        metadata.validate_arguments(dict(arguments))
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        name = str(error["loc"][0]) if error["loc"] else "arguments"
        if error["type"] == "missing":
            return f"{name} is required; {takes}. Nothing was run or charged."
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "…"
        return f"{name} is invalid ({error['msg']}), got {shown}. Nothing was run or charged."
    return None


@dataclass
class _RolloutLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    """Calls holding or waiting for the lock; the entry is dropped when this reaches 0."""


class SerialToolset(HookedToolset[ConfigT, StateT], Generic[ConfigT, StateT]):
    """Serialises each rollout's tool calls and refuses bad arguments for free (see module docstring)."""

    def __init__(self, config: ConfigT) -> None:
        super().__init__(config)
        self._rollout_locks: dict[str, _RolloutLock] = {}
        self._arguments: dict[str, FuncMetadata] = {}

    def register(self, mcp: MCPServer) -> None:
        super().register(mcp)
        # The same model the SDK builds from each tool's signature, so both agree on what is valid.
        self._arguments = {
            getattr(fn, "tool_name", None) or fn.__name__: func_metadata(fn) for fn in discover_decorated(self, "tool")
        }
        mcp.middleware.append(self._refuse_bad_arguments)

    async def _refuse_bad_arguments(self, ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping) and isinstance(params.get("name"), str):
            metadata = self._arguments.get(params["name"])
            arguments = params.get("arguments") or {}
            if metadata is not None and isinstance(arguments, Mapping):
                refusal = argument_refusal(params["name"], metadata, arguments)
                if refusal is not None:
                    return CallToolResult(content=[TextContent(type="text", text=refusal)], is_error=True)
        return await call_next(ctx)

    @contextlib.asynccontextmanager
    async def around_call(self) -> AsyncIterator[None]:
        """Hold the calling rollout's lock across verifiers' pull → call → push (the seam checks the
        rollout's coordinates first, so a forged rollout gets no lock made for it)."""
        key = rollout_key()
        slot = self._rollout_locks.setdefault(key, _RolloutLock())
        slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            slot.users -= 1
            if not slot.users:
                del self._rollout_locks[key]
