"""Run-time patches on verifiers' container runtimes: a harness-start limit, engine-side liveness for
docker/podman boxes, and a failed harness turn typed as the agent's fault on the engine's word.

Installed by `arena.vf_hooks` in the vf-eval processes Arena launches, only when `pinned()`; the why of
each is in that module's docstring, the upstream change in `docs/upstream/`. A patch whose verifiers
names are missing raises `SeamError` before it changes anything: the caller then fails closed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "LIVENESS_NAMES",
    "bound_box_reads",
    "host_checked",
    "limit_open_process",
    "liveness_from_engine",
    "runner_exit_code",
    "tool_call_pending",
    "type_agent_faults",
]

LIVENESS_NAMES = ("alive", "_read", "write", "_communicate_host", "engine")
"""What `liveness_from_engine` replaces (`alive`, `_read`, `write`) or calls (`_communicate_host`, `engine`)
on verifiers' `DockerRuntime`, the docker and podman runtime (Apptainer's `ContainerRuntime` has no engine to ask)."""


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
    """Answer `DockerRuntime.alive()` (docker, podman) from the engine (`inspect`: is the container
    running?), bound its reads of box files (`bound_box_reads`), and mark a failed in-box read (`_read`)
    or `write` in a box the engine reports running ("in the running box: ..."), so no retry rule takes
    the box's own words for a lost box or engine.

    Raises:
        SeamError: a name it needs (`LIVENESS_NAMES`) is missing; nothing was patched.
    """
    from verifiers.v1.runtimes.docker import DockerRuntime

    from arena_kit.errors import SeamError

    missing = [name for name in LIVENESS_NAMES if not hasattr(DockerRuntime, name)]
    if missing:
        raise SeamError(
            f"verifiers' DockerRuntime has no {', '.join(missing)}: engine-side liveness "
            "(arena_kit.verifiers_seam.container_hooks) cannot install; re-read verifiers' runtimes/container.py"
        )

    async def running(self: Any) -> bool:
        container = getattr(self, "_container", None)
        if not container:
            return False
        try:
            code, out, _ = await self._communicate_host(
                self.engine, "inspect", "--format", "{{.State.Running}}", container
            )
        except Exception:  # noqa: BLE001 - an engine that cannot answer has lost the box for this rollout
            return False
        return bool(code == 0 and out.strip() == b"true")

    DockerRuntime.alive = running
    bound_box_reads()
    for name in ("_read", "write"):
        setattr(DockerRuntime, name, host_checked(getattr(DockerRuntime, name)))


def bound_box_reads() -> None:
    """Make verifiers' docker runtime read a box's file (`_read`: `docker exec cat`, unbounded without
    `max_bytes`) as the lean runtime's exec does (`arena_kit.runtimes.exec_read`): at most
    `READ_CAP` bytes (or the caller's cap) within `READ_S`, so no file of the box (a FIFO, `/dev/zero`, a
    sparse terabyte behind a path the agent can replace: an answer file scoring reads, its harness's
    settings) holds the eval process or fills its memory. Once per process.

    Raises:
        SeamError: verifiers' `DockerRuntime` has no `_read`, `_exec` or `_communicate_host`; nothing was patched.
    """
    from verifiers.v1.errors import SandboxError
    from verifiers.v1.runtimes.docker import DockerRuntime

    from arena_kit.runtimes.exec_read import read_by_exec
    from arena_kit.errors import SeamError

    if any(not hasattr(DockerRuntime, name) for name in ("_read", "_exec", "_communicate_host")):
        raise SeamError(
            "verifiers' DockerRuntime has no _read, _exec or _communicate_host: its reads of box files "
            "cannot be bounded (arena_kit.verifiers_seam.container_hooks); re-read runtimes/container.py"
        )
    if getattr(DockerRuntime._read, "__arena_bounded__", False) or getattr(DockerRuntime._read, "host_checked", False):
        return  # bounded already (`liveness_from_engine` bounds before it checks)

    async def _read(self: Any, path: str, max_bytes: int | None = None) -> bytes:
        code, data, stderr = await read_by_exec(
            lambda argv: self._communicate_host(*self._exec({}), *argv), path, max_bytes
        )
        if code != 0:
            raise SandboxError(f"read {path!r}: {stderr.decode(errors='replace').strip()}")
        return bytes(data)

    _read.__arena_bounded__ = True  # type: ignore[attr-defined]
    _read.__wrapped__ = DockerRuntime._read  # type: ignore[attr-defined]
    DockerRuntime._read = _read


_EXITED = re.compile(r"^harness '[^']+' exited (-?\d+): |^runtime died under harness '[^']+' \(exit (-?\d+)\)")


def runner_exit_code(error: BaseException) -> int | None:
    """The harness program's exit code verifiers wrote at the start of its own message (`HarnessError`
    "harness 'x' exited N: ...", `SandboxError` "runtime died under harness 'x' (exit N)"): the exec's
    status as the engine returned it; the box's words only follow it. None: no such prefix (an ACP harness)."""
    found = _EXITED.match(str(error))
    return int(found.group(1) or found.group(2)) if found else None


def type_agent_faults() -> None:
    """Make a harness turn that failed (`HarnessError`, or verifiers' untyped `SandboxError`) in a
    docker/podman box end as the agent's fault when the engine's evidence says so
    (`arena_kit.box.faults`; the types in `arena_kit.errors`: `BoxOomError`, `AgentKilledBoxError`); any other failure is left as it is.
    A lean box (`LeanDockerRuntime`) answers with its own `_box_evidence`, a stock one through `inspect`.

    Raises:
        SeamError: verifiers' `HarnessSession` has no `turn` or its sessions no `runtime`; nothing was patched.
    """
    import inspect as source

    from verifiers.v1.errors import HarnessError, SandboxError
    from verifiers.v1.harness import HarnessSession
    from verifiers.v1.runtimes.docker import DockerRuntime

    from arena_kit.box.faults import agent_fault
    from arena_kit.errors import SeamError

    original = getattr(HarnessSession, "turn", None)
    if original is None or "self.runtime" not in source.getsource(HarnessSession.__init__):
        raise SeamError(
            "verifiers' HarnessSession has no turn() or keeps no runtime: agent-fault typing "
            "(arena_kit.verifiers_seam.container_hooks) cannot install; re-read verifiers' harness.py"
        )

    async def turn(self: Any, messages: Any = None) -> Any:
        try:
            return await original(self, messages)
        except (HarnessError, SandboxError) as error:
            runtime = getattr(self, "runtime", None)
            if type(error) not in (HarnessError, SandboxError) or not isinstance(runtime, DockerRuntime):
                raise
            evidence = await box_evidence(runtime)
            code = runner_exit_code(error)
            pending = code is None and tool_call_pending(getattr(self, "trace", None))
            fault = None if evidence is None else agent_fault(evidence, code, str(error)[-2000:], pending)
            if fault is None:
                raise
            raise fault from error

    HarnessSession.turn = turn


def tool_call_pending(trace: Any) -> bool:
    """Whether the last message the host recorded on `trace` is the model's tool call (no result came back)."""
    try:
        last = trace.last_message
    except (AttributeError, ValueError):  # no trace, or no message yet
        return False
    return getattr(last, "role", None) == "assistant" and bool(getattr(last, "tool_calls", None))


async def box_evidence(runtime: Any) -> Any:
    """The engine's and this host's evidence on `runtime`'s box (`arena_kit.box.faults.BoxEvidence`),
    None when the engine cannot be asked (the failure then keeps its own type). A box the host stopped
    over a bound (`arena_kit.box.faults.over_bound`) needs no engine's word."""
    import json

    from arena_kit.box.faults import BoxEvidence, host_oom_kills, over_bound

    own = getattr(runtime, "_box_evidence", None)
    if own is not None:
        return await own()
    container = getattr(runtime, "_container", None)
    if not container:
        return None
    stopped = over_bound(str(getattr(getattr(runtime, "info", None), "id", "") or ""))
    if stopped is not None:  # the host's own record: no engine needed
        return BoxEvidence(running=True, over_bound=stopped)
    try:
        code, out, _ = await runtime._communicate_host(
            runtime.engine, "inspect", "--format", "{{.Id}} {{json .State}}", container
        )
        ident, _, state_text = out.decode().strip().partition(" ")
        state = json.loads(state_text) if code == 0 else None
    except Exception:  # noqa: BLE001 - an engine that cannot answer gives no evidence
        return None
    if not isinstance(state, dict):
        return None
    running = bool(state.get("Running"))
    kills = host_oom_kills(int(state.get("Pid") or 0), ident) if running else None
    return BoxEvidence(running=running, oom_killed=bool(state.get("OOMKilled")), oom_kills=kills)


def host_checked(operation: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """`operation` (an in-box read or write), whose failure in a box the engine reports running is
    marked as such ("in the running box: ..."), so no retry rule takes it for a lost box or engine.
    An operation already checked is returned as it is (a hook installed twice marks an error once)."""
    from verifiers.v1.errors import SandboxError

    if getattr(operation, "host_checked", False):
        return operation

    async def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await operation(self, *args, **kwargs)
        except SandboxError as error:
            if await self.alive():
                raise SandboxError(f"in the running box: {error}") from error
            raise

    checked.host_checked = True  # type: ignore[attr-defined]
    return checked
