"""The gateway's `command_session.CommandSession` over ConnectRPC, each session one `docker exec` into the box.

What the SDK relies on and this keeps: `Start` streams a StartEvent, stdout/stderr DataEvents and
an EndEvent; a `Start` that repeats a known `session_uuid` attaches instead of spawning again, and
`Connect` re-attaches (both re-announce the start and replay a retained end; output emitted while
detached is not replayed); `SendInput`/`SendSignal` apply each idempotency key once. A one-line
`sh` prefix records the in-box pid, so a signal reaches the process rather than the docker client.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from prime_sandboxes._connectrpc import GOOGLE_PROTOBUF_BINARY_CODEC
from prime_sandboxes._proto.command_session import command_session_pb2
from prime_sandboxes.rpc_command_session import (
    COMMAND_SESSION_CONNECT_RPC_METHOD,
    COMMAND_SESSION_SEND_INPUT_RPC_METHOD,
    COMMAND_SESSION_SEND_SIGNAL_RPC_METHOD,
    COMMAND_SESSION_START_RPC_METHOD,
)

from prime_standin.boxes import Box, Boxes

pb: Any = command_session_pb2  # generated without type stubs
SERVICE = "/command_session.CommandSession"
_PID_PREFIX = 'echo $$ > "$0"; exec "$@"'
_SIGNALS = {pb.SIGNAL_SIGTERM: "TERM", pb.SIGNAL_SIGKILL: "KILL"}
_Event = tuple[str, Any]


def _event(kind: str, value: Any) -> Any:
    if kind == "start":
        return pb.CommandSessionEvent(start=pb.CommandSessionEvent.StartEvent(pid=value))
    if kind == "end":
        return pb.CommandSessionEvent(end=pb.CommandSessionEvent.EndEvent(exit_code=value))
    return pb.CommandSessionEvent(data=pb.CommandSessionEvent.DataEvent(**{kind: value}))


class Session:
    """One command in one box; output fans out to every attached stream."""

    def __init__(self, box: Box, request: Any) -> None:
        self.box = box
        self.uuid = request.session_uuid or str(uuid.uuid4())
        self.spec = request.command
        self.stdin = request.stdin
        self.pid_file = f"/tmp/.prime-standin-{self.uuid}.pid"
        self.exit_code: int | None = None
        self.listeners: list[asyncio.Queue[_Event]] = []
        self.keys: set[str] = set()
        self.proc: asyncio.subprocess.Process | None = None

    async def spawn(self) -> None:
        argv = ["exec", *(["-i"] if self.stdin else [])]
        if self.spec.HasField("user"):
            argv += ["-u", self.spec.user]
        if self.spec.HasField("cwd"):
            argv += ["-w", self.spec.cwd]
        for key, value in self.spec.envs.items():
            argv += ["-e", f"{key}={value}"]
        argv += [self.box.container, "sh", "-c", _PID_PREFIX, self.pid_file, self.spec.cmd, *self.spec.args]
        self.proc = await asyncio.create_subprocess_exec(
            "docker",
            *argv,
            stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None and self.proc.stderr is not None

        async def forward(stream: asyncio.StreamReader, kind: str) -> None:
            while chunk := await stream.read(65536):
                self._broadcast((kind, chunk))

        await asyncio.gather(forward(self.proc.stdout, "stdout"), forward(self.proc.stderr, "stderr"))
        self.exit_code = await self.proc.wait()
        self._broadcast(("end", self.exit_code))

    def _broadcast(self, event: _Event) -> None:
        for queue in self.listeners:
            queue.put_nowait(event)

    async def stream(self) -> AsyncIterator[_Event]:
        queue: asyncio.Queue[_Event] = asyncio.Queue()
        self.listeners.append(queue)
        try:
            yield ("start", self.proc.pid if self.proc else 0)
            if self.exit_code is not None:
                yield ("end", self.exit_code)
                return
            while True:
                event = await queue.get()
                yield event
                if event[0] == "end":
                    return
        finally:
            self.listeners.remove(queue)

    def first_use(self, key: str) -> bool:
        """Whether an idempotency key is new (a retried control RPC repeats its key)."""
        if key and key in self.keys:
            return False
        self.keys.add(key)
        return True


class CommandSessions:
    """Every session of every box, keyed by session uuid; each RPC is authorised by the box's token."""

    def __init__(self, boxes: Boxes) -> None:
        self.boxes = boxes
        self.sessions: dict[str, Session] = {}

    def _box(self, ctx: RequestContext[Any, Any], method: str) -> Box:
        self.boxes.calls.append(f"RPC {method}")
        token = (ctx.request_headers.get("authorization") or "").removeprefix("Bearer ")
        box = self.boxes.by_token(token)
        if box is None:
            raise ConnectError(Code.UNAUTHENTICATED, "unknown or missing gateway token")
        if box.status != "RUNNING":
            raise ConnectError(Code.NOT_FOUND, f"sandbox {box.id} is {box.status}")
        return box

    def _session(self, box: Box, selector: Any) -> Session:
        session = self.sessions.get(selector.session_uuid)
        if session is None or session.box is not box:
            raise ConnectError(Code.NOT_FOUND, f"no session {selector.session_uuid!r} in sandbox {box.id}")
        return session

    async def start(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        box = self._box(ctx, "Start")
        session = self.sessions.get(request.session_uuid) if request.session_uuid else None
        if session is None:
            session = Session(box, request)
            self.sessions[session.uuid] = session
            await session.spawn()
        elif session.box is not box or session.spec != request.command:
            raise ConnectError(Code.FAILED_PRECONDITION, "session_uuid reused with a different command")
        async for kind, value in session.stream():
            yield pb.StartResponse(event=_event(kind, value))

    async def connect(self, request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        session = self._session(self._box(ctx, "Connect"), request.session)
        async for kind, value in session.stream():
            yield pb.ConnectResponse(event=_event(kind, value))

    async def send_input(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        session = self._session(self._box(ctx, "SendInput"), request.session)
        if session.first_use(request.input_uuid):
            if session.proc is None or session.proc.stdin is None or session.exit_code is not None:
                raise ConnectError(Code.FAILED_PRECONDITION, "the process has no open stdin")
            session.proc.stdin.write(request.input.stdin)
            await session.proc.stdin.drain()
        return pb.SendInputResponse()

    async def send_signal(self, request: Any, ctx: RequestContext[Any, Any]) -> Any:
        box = self._box(ctx, "SendSignal")
        session = self._session(box, request.session)
        name = _SIGNALS.get(request.signal)
        if name is None:
            raise ConnectError(Code.INVALID_ARGUMENT, f"unsupported signal {request.signal}")
        if session.first_use(request.signal_uuid) and session.exit_code is None:
            await asyncio.create_subprocess_exec(
                "docker",
                "exec",
                box.container,
                "sh",
                "-c",
                f'kill -{name} "$(cat "$0")"',
                session.pid_file,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        return pb.SendSignalResponse()

    def close_box(self, box: Box) -> None:
        for session in self.sessions.values():
            if session.box is box and session.proc is not None and session.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    session.proc.kill()


class CommandSessionApp(ConnectASGIApplication[CommandSessions]):
    """The ConnectRPC ASGI app for one stand-in; mounted under each box's gateway prefix."""

    def __init__(self, sessions: CommandSessions) -> None:
        super().__init__(service=sessions, endpoints=self._endpoints, codecs=[GOOGLE_PROTOBUF_BINARY_CODEC])

    @property
    def path(self) -> str:
        return SERVICE

    @staticmethod
    def _endpoints(s: CommandSessions) -> dict[str, Any]:
        return {
            f"{SERVICE}/Start": Endpoint.server_stream(COMMAND_SESSION_START_RPC_METHOD, s.start),
            f"{SERVICE}/Connect": Endpoint.server_stream(COMMAND_SESSION_CONNECT_RPC_METHOD, s.connect),
            f"{SERVICE}/SendInput": Endpoint.unary(COMMAND_SESSION_SEND_INPUT_RPC_METHOD, s.send_input),
            f"{SERVICE}/SendSignal": Endpoint.unary(COMMAND_SESSION_SEND_SIGNAL_RPC_METHOD, s.send_signal),
        }
