"""A live process in a docker box over one hijacked Engine API exec stream (`LeanDockerRuntime.open_process`).

The design decision: verifiers' container runtime starts a live process (the claude_code and codex ACP
runners) as a `docker exec -i` CLI process, learns its in-box PID by polling a pidfile with one more
`docker exec` every 50 ms under a fixed 5 s deadline, and removes the pidfile with a third. Here the
exec is created through the Engine API and started on a connection of our own to the engine's unix
socket (the `Upgrade: tcp` hijack the CLI does), read on the event loop: no CLI process, no thread per
live process, and no bytes lost to an HTTP parser that read ahead of the headers (the docker SDK's
`exec_start(socket=True)` hands back the raw socket under a buffered reader that may already hold
the process's first output). The wrapper prints its PID as the first stdout line, so the handshake is
one read instead of a poll loop, and is stripped before the caller sees stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.base import RuntimeProcess
from verifiers.v1.utils.aio import run_shielded

from arena_kit.errors import EngineRefused, StartMissedError
from arena_kit.runtimes.lean_docker.engine import ENGINE_ERRORS, EXIT_CODE_WAIT_S, exec_sync, off_loop
from arena_kit.runtimes.lean_docker.exec_wire import refusal, refusal_message, sdk_error, start_request

if TYPE_CHECKING:
    import docker

__all__ = [
    "BoxProcess",
    "KILLED_EXIT",
    "START_DEADLINE_S",
    "hijack_exec",
    "open_engine_process",
    "start_box_process",
    "wrapped",
]

START_DEADLINE_S = 30.0
"""From the exec's creation to its PID line. Nothing polls here: the wait is two engine requests and
one `sh` start queued behind whatever else the engine and the CPUs do, so a burst of starts slows each
one instead of multiplying engine work (the stock 5 s was missed at c=32 because every waiting start
added 20 `docker exec` polls a second). 30 s is verifiers' own deadline for a slow (nested) host;
an engine stuck longer than that fails the rollout as a missed start (`StartMissedError`, retried)."""
ABORT_WAIT_S = 5.0
"""How long a start cut short (cancelled or failed) waits for the PID, to kill the process group."""
KILLED_EXIT = 137
"""The exit code of a process whose exec the engine can no longer report (its box was removed,
which kills every process in it with SIGKILL, or the engine is gone); `Runtime.alive` tells which."""
_STDOUT, _STDERR, _SYSERR = 1, 2, 3
_STDERR_TAIL = 4000
_WRAPPER = (
    # The target gets its own process group when `setsid -w` is available, so kill() reaps its
    # descendants; the PID echoed is the post-setsid one, which `exec` keeps as the target's.
    "if setsid -w true >/dev/null 2>&1; then "
    'exec setsid -w sh -c \'echo $$; exec "$@"\' vf-process "$@"; '
    'fi; echo $$; exec "$@"'
)
_SIGNAL = 'kill -"$1" "-$2" 2>/dev/null || kill -"$1" "$2" 2>/dev/null'

Connect = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
ExitCode = Callable[[], Awaitable[int | None]]
Signal = Callable[[list[str]], Awaitable[int]]


def wrapped(argv: list[str]) -> list[str]:
    """`argv` under the wrapper that prints the target's PID as its first stdout line."""
    return ["sh", "-c", _WRAPPER, "vf-process", *argv]


def signal_argv(signal: str, pid: int) -> list[str]:
    """The in-box command that sends `signal` to process group `pid` (or the process, without one)."""
    return ["sh", "-c", _SIGNAL, "vf-signal", signal, str(pid)]


async def hijack_exec(
    connect: Connect, api_version: str, exec_id: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Start exec `exec_id` attached (stdin, stdout, stderr) on a fresh engine connection; the
    returned pair carries the raw multiplexed stream after the engine's upgrade answer.

    Raises:
        EngineRefused: the engine answered with an error (no such exec or container, not running).
        ConnectionError: the connection closed before the engine answered.
    """
    reader, writer = await connect()
    try:
        writer.write(start_request(api_version, exec_id))
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            raise ConnectionError(f"the engine closed the exec start without an answer: {error.partial!r}") from error
        refused = refusal(head)
        if refused is None:
            return reader, writer
        status, status_line, length = refused
        try:
            raw = await asyncio.wait_for(
                reader.readexactly(length) if length is not None else reader.read(65536), timeout=5
            )
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            raw = b""
        raise EngineRefused(status, refusal_message(raw, status_line))
    except BaseException:
        writer.close()
        raise


class BoxProcess(RuntimeProcess):  # type: ignore[misc]  # verifiers ships no types
    """A live process on a hijacked exec stream: the interface of verifiers' `RuntimeProcess`
    (stdout/stderr iterators, `write`, `wait`, `poll`, `terminate`, `kill`) plus `close_stdin` and
    `pid` (the in-box PID of the target, leader of its own process group).

    `exit_code` asks the engine for the exec's exit code once the stream has ended (None: the exec
    is gone); `signal` runs a short command in the box and returns its exit code.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, exit_code: ExitCode, signal: Signal
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._exit_code = exit_code
        self._signal_in_box = signal
        self._stdout: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._stderr: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._stderr_tail = bytearray()
        self._pid_line = bytearray()
        loop = asyncio.get_running_loop()
        self._pid: asyncio.Future[int] = loop.create_future()
        self._done: asyncio.Future[int] = loop.create_future()
        self._returncode: int | None = None
        self.engine_exit_code: int | None = None
        """The exit code as the engine reported it (None: not reported; `wait` then gives `KILLED_EXIT`)."""
        self.stdout: AsyncIterator[bytes] = self._iterate(self._stdout)
        self.stderr: AsyncIterator[bytes] = self._iterate(self._stderr)
        self._pump = asyncio.create_task(self._read_frames(), name="arena-lean-process")

    @property
    def pid(self) -> int:
        """The target's in-box PID (raises InvalidStateError before `started` returned)."""
        return self._pid.result()

    async def started(self, deadline_s: float = START_DEADLINE_S, *, whole_s: float | None = None) -> int:
        """The target's PID, once the wrapper printed it (`whole_s`: the start's whole deadline, for the
        message, when part of it was spent before).

        Raises:
            StartMissedError: no PID within `deadline_s`, or the engine lost the exec before it printed one.
            SandboxError: the process exited by itself before printing its PID, or printed something else.
        """
        try:
            return await asyncio.wait_for(asyncio.shield(self._pid), deadline_s)
        except TimeoutError as error:
            raise StartMissedError(
                f"live process start: no PID within {whole_s or deadline_s:g} s "
                f"({self.stderr_text() or 'PID unavailable'})"
            ) from error

    async def abort(self) -> None:
        """Undo a start cut short: wait briefly for the PID, kill the group, drop the stream."""
        try:
            if not self._done.done():
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(self._pid), ABORT_WAIT_S)
                if self._pid.done() and not self._pid.cancelled() and self._pid.exception() is None:
                    with contextlib.suppress(Exception):
                        await self._signal_in_box(signal_argv("KILL", self._pid.result()))
        finally:
            self._writer.close()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._done), ABORT_WAIT_S)
            if not self._pump.done():
                self._pump.cancel()

    async def write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def close_stdin(self) -> None:
        """Half-close the stream: the engine closes the target's stdin (EOF), output keeps flowing."""
        if not self._writer.is_closing() and self._writer.can_write_eof():
            self._writer.write_eof()

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def poll(self) -> int | None:
        return self._returncode

    async def terminate(self) -> None:
        await self._signal("TERM")

    async def kill(self) -> None:
        await self._signal("KILL")

    async def kill_orphan(self) -> None:
        """SIGKILL the target after its stream was lost: the engine reported no exit code, so it may run on
        (`kill` takes the stream's end for the process's). A failed signal is left to the box's removal."""
        if self.engine_exit_code is None and self._pid.done() and self._pid.exception() is None:
            with contextlib.suppress(Exception):
                await self._signal_in_box(signal_argv("KILL", self._pid.result()))

    async def _signal(self, signal: str) -> None:
        if self._returncode is not None or not self._pid.done() or self._pid.exception() is not None:
            return
        code = await self._signal_in_box(signal_argv(signal, self._pid.result()))
        if code != 0 and self._returncode is None:
            raise SandboxError(f"container process signal failed: kill -{signal} {self._pid.result()} exited {code}")

    def stderr_text(self) -> str:
        """The last of what the process wrote to stderr (a bounded tail), stripped."""
        return self._stderr_tail.decode(errors="replace").strip()

    @staticmethod
    async def _iterate(queue: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
        while (chunk := await queue.get()) is not None:
            yield chunk

    def _stdout_data(self, data: bytes) -> None:
        if self._pid.done():
            self._stdout.put_nowait(data)
            return
        self._pid_line.extend(data)
        line, newline, rest = bytes(self._pid_line).partition(b"\n")
        if not newline:
            return
        text = line.decode(errors="replace").strip()
        if text.isdigit():
            self._pid.set_result(int(text))
        else:
            self._pid.set_exception(
                SandboxError(f"live process start: the wrapper printed {text[:200]!r}, not its PID")
            )
        if rest:
            self._stdout.put_nowait(rest)

    async def _read_frames(self) -> None:
        try:
            while True:
                header = await self._reader.readexactly(8)
                size = int.from_bytes(header[4:8], "big")
                data = await self._reader.readexactly(size) if size else b""
                if header[0] in (_STDERR, _SYSERR):
                    self._stderr_tail.extend(data)
                    del self._stderr_tail[:-_STDERR_TAIL]
                    self._stderr.put_nowait(data)
                elif data:
                    self._stdout_data(data)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the stream ends when the exec's process does, or when its box is removed
        finally:
            self._writer.close()
            self._stdout.put_nowait(None)
            self._stderr.put_nowait(None)
            code: int | None = None
            try:
                code = await self._exit_code()
            except Exception:  # noqa: BLE001 - an engine that cannot say is KILLED_EXIT's case
                pass
            finally:
                self._finish(code)

    def _finish(self, code: int | None) -> None:
        self.engine_exit_code = code
        self._returncode = KILLED_EXIT if code is None else code
        if not self._pid.done():
            # The engine's word decides: an exec it lost (no exit code) is infrastructure; a process
            # that exited by itself is what the box did.
            fault = StartMissedError if code is None else SandboxError
            self._pid.set_exception(
                fault(
                    f"live process start: exited with code {self._returncode} before reporting its PID: "
                    f"{self.stderr_text() or 'no output'}"
                )
            )
        if not self._done.done():
            self._done.set_result(self._returncode)


async def start_box_process(
    create: Callable[[], Awaitable[str]],
    connect: Connect,
    api_version: str,
    exit_code: Callable[[str], Awaitable[int | None]],
    signal: Signal,
    deadline_s: float = START_DEADLINE_S,
) -> BoxProcess:
    """Create an exec (`create` returns its id; its argv must be `wrapped`), start it on a hijacked
    connection and wait for its PID, all within `deadline_s`. A start cut short (deadline,
    cancellation, error) kills what it started before it raises.

    Raises:
        StartMissedError, SandboxError: the PID did not arrive (see `BoxProcess.started`).
        EngineRefused, ConnectionError and what `create` raises: the engine failed the exec.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    try:
        async with asyncio.timeout_at(deadline):
            exec_id = await create()
            reader, writer = await hijack_exec(connect, api_version, exec_id)
    except TimeoutError as error:
        # Nothing was attached yet; an exec created but never started runs nothing.
        raise StartMissedError(
            f"live process start: the engine did not start the exec within {deadline_s:g} s"
        ) from error

    async def code() -> int | None:
        return await exit_code(exec_id)

    process = BoxProcess(reader, writer, code, signal)
    try:
        await process.started(max(0.0, deadline - loop.time()), whole_s=deadline_s)
    except BaseException:
        await run_shielded(process.abort())
        raise
    return process


async def open_engine_process(
    api: docker.APIClient,
    socket_path: str,
    container: str,
    argv: list[str],
    env: dict[str, str],
    user: str | None,
    workdir: str | None,
    *,
    wrap: bool = True,
) -> BoxProcess:
    """`argv` as a live process in `container` over the Engine API (see the module docstring); `wrap`
    False runs `argv` itself as the exec's process (no shell, no process group of its own), which
    must then print its own PID as its first stdout line.

    Raises:
        StartMissedError, SandboxError: the PID did not arrive within `START_DEADLINE_S`.
        docker.errors.APIError (NotFound for a missing container or exec), ConnectionError, OSError:
            the engine failed the exec, in the docker SDK's terms (`engine.engine_fault` types them).
    """

    def create() -> str:
        created: dict[str, str] = api.exec_create(
            container,
            wrapped(argv) if wrap else argv,
            stdin=True,
            stdout=True,
            stderr=True,
            environment=env,
            user=user or "",
            workdir=workdir,
        )
        return created["Id"]

    def exit_code(exec_id: str) -> int | None:
        # The stream can end a moment before the engine records the exit code.
        deadline = time.monotonic() + EXIT_CODE_WAIT_S
        while True:
            try:
                state = api.exec_inspect(exec_id)
            except ENGINE_ERRORS:  # the exec went with its box (or the engine is gone)
                return None
            if state.get("ExitCode") is not None and not state.get("Running"):
                return int(state["ExitCode"])
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)

    async def signal(command: list[str]) -> int:
        code, _, _ = await off_loop(exec_sync, api, container, command, {}, user, workdir, None)
        return code

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_unix_connection(socket_path)

    try:
        return await start_box_process(
            lambda: off_loop(create),
            connect,
            api.api_version,
            lambda exec_id: off_loop(exit_code, exec_id),
            signal,
        )
    except EngineRefused as error:
        raise sdk_error(error.status, error.explanation) from error
