"""The Engine API under the lean runtime: the process's one client, one exec start to finish, and what a failed call means.

Every exec blocks one pool thread for its life and goes over the engine's unix socket on a connection of
its own (docker-py reads frames from under its HTTP parser and loses output that arrives with the upgrade
answer, #3332). A failed call becomes a typed fault only on the engine's own word (`engine_fault`): a
refused or dropped connection is `EngineUnreachableError`, the daemon's "No such container" or
"container ... is not running" is `BoxLostError`; anything else is a plain `SandboxError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions
from docker.utils.socket import STDERR, STDOUT, frames_iter
from verifiers.v1.errors import SandboxError

from arena_kit.errors import BoxLostError, EngineUnreachableError
from arena_kit.runtimes.lean_docker.exec_wire import refusal, refusal_message, sdk_error, start_request

__all__ = [
    "CONNECTION_LOST",
    "ENGINE_ERRORS",
    "EXIT_CODE_WAIT_S",
    "HangUp",
    "engine_client",
    "engine_fault",
    "engine_socket",
    "exec_sync",
    "image_user",
    "off_loop",
]

T = TypeVar("T")

EXIT_CODE_WAIT_S = 5.0
"""How long an exec whose stream ended may take to have its exit code recorded."""

_client: docker.DockerClient | None = None
_client_lock = threading.Lock()
# Every exec blocks one thread for its whole life (a rollout's main program for minutes), so the
# pool must outgrow the concurrency; asyncio's default pool (cores + 4) would queue rollouts.
_EXECUTOR = ThreadPoolExecutor(max_workers=256, thread_name_prefix="arena-lean-exec")


def engine_client() -> docker.DockerClient:
    """The process's one Engine API client (a pooled HTTP session over the docker socket).

    Raises:
        EngineUnreachableError: the engine does not answer (with the fix).
    """
    global _client
    with _client_lock:
        if _client is None:
            try:
                _client = docker.DockerClient.from_env(max_pool_size=256)
            except docker.errors.DockerException as error:
                raise EngineUnreachableError(
                    f"the docker engine is not reachable: {error}. "
                    'Start Docker (or set DOCKER_HOST), or select the stock runtime with `[env] docker = "stock"`'
                ) from error
        return _client


def engine_socket() -> str | None:
    """The engine's unix socket path (`DOCKER_HOST`, else the default), None for any other transport."""
    from docker.utils import parse_host

    address = str(parse_host(os.environ.get("DOCKER_HOST")))
    return address.removeprefix("http+unix://") if address.startswith("http+unix://") else None


ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    OSError,
)
"""What an Engine API call raises when the engine fails it (the docker SDK passes transport errors
through unwrapped; a dropped exec stream surfaces as a socket error)."""
CONNECTION_LOST = (requests.exceptions.ConnectionError, urllib3.exceptions.ProtocolError, ConnectionError)
"""A refused or dropped connection to the engine."""
_BOX_GONE = re.compile(r"No such container|[Cc]ontainer \S+ is not running")
"""The daemon's own explanation for a call on a removed or stopped container."""


def engine_fault(operation: str, error: BaseException) -> SandboxError:
    """The fault a failed Engine API call during `operation` is: `EngineUnreachableError` for a refused
    or dropped connection, `BoxLostError` when the daemon answers that the container is gone or
    stopped, else a plain `SandboxError` (no retry rule matches it)."""
    if isinstance(error, EngineUnreachableError):
        return error
    if isinstance(error, CONNECTION_LOST):
        return EngineUnreachableError(
            f"{operation}: the docker engine did not answer ({type(error).__name__}: {error})"
        )
    if isinstance(error, docker.errors.APIError):
        explanation = str(error.explanation or error)
        if _BOX_GONE.search(explanation):
            return BoxLostError(f"{operation}: the engine reports the box gone: {explanation}")
        return SandboxError(f"{operation}: the engine refused: {explanation}")
    return SandboxError(f"{operation}: {type(error).__name__}: {error}")


class HangUp:
    """The engine connection of one exec, which a caller that stopped waiting (a cancelled await)
    hangs up: the thread reading it returns at once instead of living as long as the process in the box."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.done = False

    def __call__(self) -> None:
        self.done = True
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)


def _attached(
    api: docker.APIClient, exec_id: str, stdin: bytes | None, hang_up: HangUp | None = None
) -> tuple[bytes, bytes]:
    """Start exec `exec_id` attached: feed `stdin` (then half-close), collect stdout and stderr to the end.

    Over the engine's unix socket this sends the upgrade request itself and reads the answer and the
    frames through one buffer: the docker SDK reads frames from under its HTTP parser, so output that
    arrives with the upgrade answer (a box that prints before a loaded host reads) is lost (docker-py
    #3332), and its demux joins frames quadratically. Another transport keeps the SDK's path.
    """
    path = getattr(api.get_adapter(api.base_url), "socket_path", None) if isinstance(api, docker.APIClient) else None
    if path is None:
        return _attached_sdk(api, exec_id, stdin)
    collected = {STDOUT: bytearray(), STDERR: bytearray()}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        if hang_up is not None:
            hang_up.sock = sock
            if hang_up.done:
                raise ConnectionAbortedError("the caller stopped waiting for the exec")
        sock.connect(path)
        sock.sendall(start_request(api.api_version, exec_id))
        buffer = bytearray()
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"the engine closed the exec start without an answer: {bytes(buffer)!r}")
            buffer += chunk
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        _raise_refusal(head, rest, sock)
        if stdin is not None:
            try:
                sock.sendall(stdin)
                sock.shutdown(socket.SHUT_WR)  # the engine closes the process's stdin on our half-close
            except (BrokenPipeError, ConnectionResetError):
                pass  # the process quit without reading it all: its words and exit code still follow
        buffer = bytearray(rest)
        while True:
            while len(buffer) >= 8 and len(buffer) >= 8 + (size := int.from_bytes(buffer[4:8], "big")):
                collected[STDERR if buffer[0] == STDERR else STDOUT] += buffer[8 : 8 + size]
                del buffer[: 8 + size]
            try:
                chunk = sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
    return bytes(collected[STDOUT]), bytes(collected[STDERR])


def _raise_refusal(head: bytes, rest: bytes, sock: socket.socket) -> None:
    """Nothing for the engine's upgrade answer; for an error answer, the docker SDK's error for it."""
    refused = refusal(head)
    if refused is None:
        return
    status, status_line, length = refused
    raw = bytearray(rest)
    sock.settimeout(5)
    with contextlib.suppress(OSError):
        while (length is None or len(raw) < length) and (chunk := sock.recv(65536)):
            raw += chunk
    raise sdk_error(status, refusal_message(bytes(raw), status_line))


def _attached_sdk(api: docker.APIClient, exec_id: str, stdin: bytes | None) -> tuple[bytes, bytes]:
    """`_attached` through the docker SDK (an engine not on a unix socket)."""
    if stdin is None:
        out, err = api.exec_start(exec_id, demux=True)
        return out or b"", err or b""
    sock = api.exec_start(exec_id, socket=True)
    raw = cast(socket.socket, getattr(sock, "_sock", sock))
    collected = {STDOUT: bytearray(), STDERR: bytearray()}
    try:
        raw.sendall(stdin)
        raw.shutdown(socket.SHUT_WR)  # the engine closes the process's stdin on our half-close
        for stream, data in frames_iter(sock, tty=False):  # type: ignore[no-untyped-call]
            collected[STDERR if stream == STDERR else STDOUT].extend(data)
    finally:
        sock.close()
    return bytes(collected[STDOUT]), bytes(collected[STDERR])


def exec_sync(
    api: docker.APIClient,
    container: str,
    argv: list[str],
    env: dict[str, str],
    user: str | None,
    workdir: str | None,
    stdin: bytes | None,
    hang_up: HangUp | None = None,
) -> tuple[int, bytes, bytes]:
    """One exec through the Engine API: create, start (stdin fed then half-closed), collect, exit code.

    Raises:
        ConnectionAbortedError: `hang_up` was called (nobody waits for the answer any more).
    """
    exec_id = api.exec_create(
        container,
        argv,
        stdout=True,
        stderr=True,
        stdin=stdin is not None,
        environment=env,
        user=user or "",
        workdir=workdir,
    )["Id"]
    out, err = _attached(api, exec_id, stdin, hang_up)
    if hang_up is not None and hang_up.done:
        raise ConnectionAbortedError("the caller stopped waiting for the exec")
    # The stream can end a moment before the engine records the exit code.
    deadline = time.monotonic() + EXIT_CODE_WAIT_S
    while True:
        state = api.exec_inspect(exec_id)
        if state.get("ExitCode") is not None and not state.get("Running"):
            return int(state["ExitCode"]), out or b"", err or b""
        if time.monotonic() > deadline:
            raise SandboxError(f"exec {argv[:1]} in {container} ended without an exit code")
        time.sleep(0.01)


@functools.lru_cache(maxsize=64)
def image_user(api: docker.APIClient, image: str) -> str:
    """The user an image runs as ("" is root); one inspect per image and process."""
    user: str = api.inspect_image(image)["Config"].get("User") or ""  # type: ignore[no-untyped-call]
    return user


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(_EXECUTOR, fn, *args)
