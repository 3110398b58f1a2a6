"""A verifiers Toolset base whose tool calls run one at a time per rollout, so budgets hold.

verifiers syncs `trace.state` around each call as pull → call → push, and says concurrent writes
are last-write-wins: two parallel calls of one rollout would both see the same budget and both
spend it. `SerialToolset` holds a per-rollout lock across the whole pull/call/push, keyed by the
rollout's state route (shared servers) or state URL (per-task servers). Calls of different
rollouts still run concurrently.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable

import verifiers.v1 as vf
from verifiers.v1.mcp import server as _vf_server
from verifiers.v1.mcp.server import ConfigT
from verifiers.v1.state import StateT

__all__ = ["SerialToolset", "rollout_key"]


def rollout_key() -> str:
    """The identity of the calling rollout, from the request's signed state coordinates."""
    route = _vf_server._request_query(_vf_server.STATE_ROUTE_PARAM)
    return route or os.environ.get("VF_STATE_URL", "") or "-"


class SerialToolset(vf.Toolset[ConfigT, StateT]):
    """Serialises each rollout's tool calls (see module docstring)."""

    def __init__(self, config: ConfigT) -> None:
        super().__init__(config)
        self._rollout_locks: dict[str, asyncio.Lock] = {}

    def _with_state(self, fn: Callable) -> Callable:
        synced = super()._with_state(fn)

        @functools.wraps(fn)
        async def serial(*args, **kwargs):
            lock = self._rollout_locks.setdefault(rollout_key(), asyncio.Lock())
            async with lock:
                return await synced(*args, **kwargs)

        serial.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        return serial
