"""Re-attaches the host-side tool server to each rollout's live box through verifiers' runtimes.

`Task.setup` records the box's runtime info (`box_info`: its type, id and runtime config) in the
rollout's state. The tool server attaches to that box on first use (docker: `LeanDockerRuntime.borrow`,
verifiers' docker runtime over the Engine API; podman: verifiers' `PodmanRuntime.attach`; prime:
`prime_box.borrow`), keeps one handle per rollout and lets go of it
once idle. A handle never starts, stops or removes its box: the rollout that provisioned it does.
Every other runtime is refused at setup, in words, before the agent starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import verifiers.v1 as vf
from pydantic import Field, TypeAdapter
from verifiers.v1.runtimes import (
    DockerRuntimeInfo,
    PodmanRuntime,
    PodmanRuntimeInfo,
    PrimeRuntimeInfo,
)

from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

from sqlite_sandbox import prime_box

__all__ = ["IDLE_S", "SUPPORTED", "BoxInfo", "Boxes", "attach", "box_info"]

BoxInfo = Annotated[DockerRuntimeInfo | PodmanRuntimeInfo | PrimeRuntimeInfo, Field(discriminator="type")]
"""What the tool server needs to re-attach to a rollout's box: verifiers' own runtime info."""
SUPPORTED = ("docker", "podman", "prime")
IDLE_S = 300.0
"""Seconds a rollout's handle is kept after its last tool call."""

_BOX_INFO: TypeAdapter[Any] = TypeAdapter(BoxInfo)


def box_info(runtime: vf.Runtime) -> Any:
    """The runtime info of `runtime`'s box, for the rollout state (a `BoxInfo`).

    Raises:
        vf.TaskError: the runtime is one the tools cannot reach (subprocess, apptainer, modal,
            e2b), it has no box id, or (prime) the tool server would have no credentials.
    """
    info = runtime.info
    kind = getattr(info, "type", None)
    if kind == "subprocess":
        raise vf.TaskError(
            "sqlite_sandbox cannot serve the subprocess runtime: the agent would work on the host, "
            f"not in a box holding the database; run with a {', '.join(SUPPORTED)} runtime"
        )
    if kind not in SUPPORTED:
        raise vf.TaskError(
            f"sqlite_sandbox cannot serve the {kind} runtime: its host-side tools re-attach only to "
            f"{', '.join(SUPPORTED)} boxes; run with one of those"
        )
    if not info.id:
        raise vf.TaskError(f"the {kind} runtime reported no box id, so the sqlite_sandbox tools could not reach it")
    if kind == "prime" and (problem := prime_box.credentials_problem() or prime_box.version_problem()):
        raise vf.TaskError(f"sqlite_sandbox cannot reach Prime sandboxes from the host: {problem}")
    return _BOX_INFO.validate_python(info.model_dump())


@contextlib.asynccontextmanager
async def attach(info: Any) -> AsyncIterator[vf.Runtime]:
    """A runtime on the live box `info` describes, borrowed for the block (a `BoxInfo`).

    Raises:
        vf.SandboxError: the box is gone, or cannot be reached with this host's credentials.
    """
    if isinstance(info, PrimeRuntimeInfo):
        yield prime_box.borrow(info)
        return
    if isinstance(info, PodmanRuntimeInfo):
        # Without a service URL, attach starts no proxy; its exit never removes a borrowed container.
        async with PodmanRuntime.attach(info, info.id) as runtime:
            yield runtime
        return
    # Docker: the same runtime interface over the Engine API (a `docker exec` CLI process per
    # call costs ~16 ms of host CPU, the API ~3 ms).
    async with LeanDockerRuntime.borrow(info, info.id) as runtime:
        yield runtime


@dataclass
class _Held:
    runtime: vf.Runtime
    exit: contextlib.AsyncExitStack
    used: float


class Boxes:
    """Attached handles, one per (event loop, box): a served toolset has one loop, so one per rollout.
    Idle handles are let go on the next call of any rollout."""

    def __init__(self, idle_s: float = IDLE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._idle_s = idle_s
        self._clock = clock
        self._held: dict[tuple[asyncio.AbstractEventLoop, str, str], _Held] = {}

    def _key(self, info: Any) -> tuple[asyncio.AbstractEventLoop, str, str]:
        return asyncio.get_running_loop(), str(info.type), str(info.id)

    def __len__(self) -> int:
        return len(self._held)

    async def runtime(self, info: Any) -> vf.Runtime:
        """The attached runtime of box `info`, attaching on first use.

        Raises:
            vf.SandboxError: see `attach`.
        """
        now = self._clock()
        for key, idle in list(self._held.items()):
            if now - idle.used > self._idle_s:
                del self._held[key]
                await idle.exit.aclose()
        key = self._key(info)
        held = self._held.get(key)
        if held is None:
            stack = contextlib.AsyncExitStack()
            runtime = await stack.enter_async_context(attach(info))
            held = self._held.setdefault(key, _Held(runtime, stack, now))
            if held.exit is not stack:  # another call of the rollout attached meanwhile
                await stack.aclose()
        held.used = now
        return held.runtime

    async def drop(self, info: Any) -> None:
        """Let go of box `info` (after it was found dead), so the next call attaches afresh."""
        held = self._held.pop(self._key(info), None)
        if held is not None:
            await held.exit.aclose()
