"""Run-time patches on verifiers' `ContainerRuntime` (docker, podman): a harness-start limit and engine-side liveness.

Installed by `arena.vf_hooks` in the vf-eval processes Arena launches, only when `pinned()`; the why of
each is in that module's docstring, the upstream change in `docs/upstream/`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["host_checked", "limit_open_process", "liveness_from_engine"]


def limit_open_process(limit: int) -> None:
    """Put `ContainerRuntime.open_process` behind a semaphore of `limit` (at most `limit` starts at once)."""
    from verifiers.v1.runtimes.container import ContainerRuntime

    original: Callable[..., Awaitable[Any]] = ContainerRuntime.open_process
    gate = asyncio.Semaphore(limit)

    async def admitted(self: Any, argv: list[str], env: dict[str, str]) -> Any:
        async with gate:
            return await original(self, argv, env)

    ContainerRuntime.open_process = admitted


def liveness_from_engine() -> None:
    """Answer `ContainerRuntime.alive()` from the engine (`inspect`: is the container running?), and
    mark a failed in-box read (`_read`) or `write` in a box the engine reports running ("in the running
    box: ..."), so no retry rule takes the box's own words for a lost box or engine."""
    from verifiers.v1.runtimes.container import ContainerRuntime

    async def running(self: Any) -> bool:
        container = getattr(self, "_container", None)
        if not container:
            return False
        try:
            code, out, _ = await self._communicate_host(self.engine, "inspect", "--format", "{{.State.Running}}", container)
        except Exception:  # noqa: BLE001 - an engine that cannot answer has lost the box for this rollout
            return False
        return bool(code == 0 and out.strip() == b"true")

    ContainerRuntime.alive = running
    for name in ("_read", "write"):
        setattr(ContainerRuntime, name, host_checked(getattr(ContainerRuntime, name)))


def host_checked(operation: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """`operation` (an in-box read or write), whose failure in a box the engine reports running is
    marked as such ("in the running box: ..."), so no retry rule takes it for a lost box or engine."""
    from verifiers.v1.errors import SandboxError

    async def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await operation(self, *args, **kwargs)
        except SandboxError as error:
            if await self.alive():
                raise SandboxError(f"in the running box: {error}") from error
            raise

    return checked
