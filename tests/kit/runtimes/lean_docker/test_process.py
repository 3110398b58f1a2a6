"""The lean live process (`arena_kit.runtimes.lean_docker.process`) against a fake engine socket, and its wrapper in a real
`sh`: the upgrade request, the PID handshake, stdout/stderr demultiplexing, stdin, exit codes, signals,
and what a start cut short leaves behind."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import docker.errors
import pytest
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.base import RuntimeProcess

import arena_kit.runtimes.lean_docker.process as lp
import arena_kit.runtimes.lean_docker.engine as engine
from arena_kit.errors import BoxLostError, EngineRefused, EngineUnreachableError, StartMissedError

UPGRADED = b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"


def frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


class Engine:
    """The far end of one engine connection: what the client sent, and a script of what to answer."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.ours, self.theirs = ours, theirs
        theirs.setblocking(False)
        self.signals: list[list[str]] = []
        self.exit: int | None = 0

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(sock=self.ours)

    async def send(self, data: bytes) -> None:
        await asyncio.get_running_loop().sock_sendall(self.theirs, data)

    async def request(self) -> bytes:
        """The client's exec start request (headers and body)."""
        loop, data = asyncio.get_running_loop(), b""
        while b"\r\n\r\n" not in data or not data.endswith(b"}"):
            data += await loop.sock_recv(self.theirs, 4096)
        return data

    async def received(self) -> bytes:
        """What the client wrote after its request, until it half-closed or closed."""
        loop, data = asyncio.get_running_loop(), b""
        while chunk := await loop.sock_recv(self.theirs, 4096):
            data += chunk
        return data

    def close(self) -> None:
        self.theirs.close()

    async def exit_code(self) -> int | None:
        return self.exit

    async def signal(self, argv: list[str]) -> int:
        self.signals.append(argv)
        return 0


async def start(engine: Engine, script: Callable[[], Awaitable[Any]], deadline_s: float = 5.0) -> lp.BoxProcess:
    async def create() -> str:
        return "exec123"

    player = asyncio.create_task(script())
    try:
        return await lp.start_box_process(
            create, engine.connect, "1.41", lambda _id: engine.exit_code(), engine.signal, deadline_s
        )
    finally:
        await asyncio.sleep(0)
        if player.done() and player.exception() is not None:
            raise player.exception()  # type: ignore[misc]


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def test_the_process_has_every_method_of_verifiers_live_process_and_nothing_abstract_left():
    assert not getattr(lp.BoxProcess, "__abstractmethods__", None)
    assert issubclass(lp.BoxProcess, RuntimeProcess)


def test_the_start_is_an_upgrade_request_and_the_pid_line_is_stripped_even_when_it_arrives_with_the_headers():
    async def scenario() -> tuple[bytes, int, list[bytes], list[bytes], int]:
        engine = Engine()

        async def play() -> bytes:
            request = await engine.request()
            # Headers, PID and the first output in one write: what an HTTP parser reading ahead would swallow.
            await engine.send(UPGRADED + frame(1, b"41\nfirst") + frame(2, b"warn") + frame(1, b" second\n"))
            engine.exit = 3
            engine.close()
            return request

        player = asyncio.create_task(play())
        process = await start(engine, lambda: asyncio.sleep(0))
        request = await player
        out = [chunk async for chunk in process.stdout]
        err = [chunk async for chunk in process.stderr]
        return request, process.pid, out, err, await process.wait()

    request, pid, out, err, code = run(scenario())
    head, _, body = request.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1.41/exec/exec123/start HTTP/1.1\r\n")
    assert b"\r\nUpgrade: tcp" in head and b"\r\nConnection: Upgrade" in head
    assert json.loads(body) == {"Detach": False, "Tty": False}
    assert (pid, b"".join(out), b"".join(err), code) == (41, b"first second\n", b"warn", 3)


def test_a_pid_line_split_over_frames_is_joined_and_output_after_it_passes_through_unchanged():
    async def scenario() -> tuple[int, bytes]:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            await engine.send(UPGRADED + frame(1, b"12"))
            await asyncio.sleep(0.05)
            await engine.send(frame(1, b"34"))
            await asyncio.sleep(0.05)
            await engine.send(frame(1, b"\n") + frame(1, b"\x00\x00\x00\x00\x00\x00\x00\x02{}"))
            engine.close()

        process = await start(engine, play)
        return process.pid, b"".join([chunk async for chunk in process.stdout])

    assert run(scenario()) == (1234, b"\x00\x00\x00\x00\x00\x00\x00\x02{}")


def test_stdin_reaches_the_engine_and_close_stdin_half_closes_while_output_still_flows():
    async def scenario() -> tuple[bytes, bytes]:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            await engine.send(UPGRADED + frame(1, b"7\n"))

        process = await start(engine, play)
        await process.write(b"packet-1")
        await process.write(b"packet-2")
        await process.close_stdin()
        sent = await engine.received()  # ends at the half-close
        await engine.send(frame(1, b"after eof"))
        engine.close()
        return sent, b"".join([chunk async for chunk in process.stdout])

    assert run(scenario()) == (b"packet-1packet-2", b"after eof")


def test_kill_and_terminate_signal_the_in_box_process_group_and_do_nothing_once_it_exited():
    async def scenario() -> tuple[list[list[str]], int | None, list[list[str]], int | None]:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            await engine.send(UPGRADED + frame(1, b"99\n"))

        process = await start(engine, play)
        assert await process.poll() is None
        await process.terminate()
        await process.kill()
        sent = list(engine.signals)
        engine.exit = None  # the exec went with its box
        engine.close()
        code = await process.wait()
        await process.kill()
        return sent, code, engine.signals[len(sent) :], await process.poll()

    sent, code, after, polled = run(scenario())
    assert sent == [lp.signal_argv("TERM", 99), lp.signal_argv("KILL", 99)]
    assert sent[1][-2:] == ["KILL", "99"] and '"-$2"' in sent[1][2]  # the group first
    assert (code, after, polled) == (lp.KILLED_EXIT, [], lp.KILLED_EXIT)


def test_an_exec_that_exits_by_itself_before_its_pid_fails_the_start_untyped():
    async def scenario() -> None:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            engine.exit = 127
            await engine.send(UPGRADED + frame(2, b"sh: not found"))
            engine.close()

        await start(engine, play)

    with pytest.raises(SandboxError) as raised:
        run(scenario())
    assert type(raised.value) is SandboxError  # the box's own exit decided it: no retry rule matches
    assert "exited with code 127 before reporting its PID: sh: not found" in str(raised.value)


def test_a_pid_that_misses_the_deadline_fails_the_start_and_the_late_process_is_killed_and_dropped():
    async def scenario() -> tuple[str, list[list[str]], bytes]:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            await engine.send(UPGRADED)
            await asyncio.sleep(0.4)  # past the deadline, within the abort's wait
            await engine.send(frame(1, b"55\n"))

        try:
            await start(engine, play, deadline_s=0.2)
        except StartMissedError as error:
            return str(error), engine.signals, await engine.received()
        raise AssertionError("the start did not fail")

    message, signals, rest = run(scenario())
    assert "no PID within 0.2 s" in message
    assert signals == [lp.signal_argv("KILL", 55)]
    assert rest == b""  # the connection was closed, so the engine ends the exec's stdin


def test_an_engine_that_refuses_the_start_raises_its_own_message_and_status():
    async def scenario() -> None:
        engine = Engine()

        async def play() -> None:
            await engine.request()
            body = json.dumps({"message": "Container vf-x is not running"}).encode()
            await engine.send(
                b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )

        await start(engine, play)

    with pytest.raises(EngineRefused) as raised:
        run(scenario())
    assert (raised.value.status, raised.value.explanation) == (409, "Container vf-x is not running")


def test_a_refused_start_reaches_the_runtime_as_the_docker_sdk_error_the_stock_words_come_from(monkeypatch):
    async def refuse(*_args: Any, **_kwargs: Any) -> lp.BoxProcess:
        raise EngineRefused(404, "No such container: vf-gone")

    monkeypatch.setattr(lp, "start_box_process", refuse)

    class Api:
        api_version = "1.41"

    with pytest.raises(docker.errors.NotFound) as raised:
        run(lp.open_engine_process(Api(), "/nonexistent.sock", "vf-gone", ["true"], {}, None, "/app"))  # type: ignore[arg-type]
    assert raised.value.explanation == "No such container: vf-gone"


@pytest.mark.parametrize(
    ("refusal", "rule"),
    [
        (EngineRefused(404, "No such container: vf-gone"), BoxLostError),
        (ConnectionRefusedError(111, "Connection refused"), EngineUnreachableError),
    ],
)
def test_an_engine_failing_a_lean_start_is_the_typed_fault_it_names(monkeypatch, refusal, rule):
    import verifiers.v1 as vf

    from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

    async def refuse(*_args: Any, **_kwargs: Any) -> lp.BoxProcess:
        raise refusal

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(lp, "start_box_process", refuse)
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/harness:latest", allow=[]))

    class Api:
        api_version = "1.41"

        def inspect_container(self, _container: str) -> dict[str, Any]:  # stopped, not for memory
            return {"State": {"Running": False, "OOMKilled": False}}

    box._api, box.container = Api(), "vf-gone"
    with pytest.raises(rule):
        run(box.open_process(["true"], {}))


def test_the_engine_socket_is_docker_host_or_the_default_and_none_for_other_transports(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert engine.engine_socket() == "/var/run/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "unix:///tmp/other.sock")
    assert engine.engine_socket() == "/tmp/other.sock"
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    assert engine.engine_socket() is None


def test_the_harness_start_gate_of_vf_hooks_does_not_apply_to_lean_starts_which_nothing_polls(monkeypatch):
    from verifiers.v1.runtimes.container import ContainerRuntime

    from arena import vf_hooks
    from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

    monkeypatch.setattr(ContainerRuntime, "open_process", ContainerRuntime.open_process)  # undone after the test
    stock = ContainerRuntime.open_process
    assert vf_hooks.install(1)
    assert ContainerRuntime.open_process is not stock  # the stock start is gated
    assert LeanDockerRuntime.open_process.__module__ == "arena_kit.runtimes.lean_docker.runtime"  # the lean one is not


def test_the_wrapper_prints_the_targets_pid_first_then_execs_it_as_leader_of_its_own_group():
    script = 'echo "self=$$ group=$(ps -o pgid= -p $$ | tr -d " ")"; echo "args=$#:$1:$2"'
    done = subprocess.run(
        lp.wrapped(["sh", "-c", script, "x", "a b", "c"]), capture_output=True, text=True, timeout=10, check=True
    )
    pid_line, target, args = done.stdout.splitlines()
    assert pid_line.isdigit()
    assert target == f"self={pid_line} group={pid_line}"  # exec kept the PID; setsid made it a group leader
    assert args == "args=2:a b:c"


@pytest.mark.docker
def test_a_live_process_in_a_lean_box_talks_is_killed_with_its_group_and_ends_with_its_box(images, monkeypatch):
    import verifiers.v1 as vf

    from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime, engine_client

    monkeypatch.setenv("VF_RUN_ID", f"lean-process-test-{uuid.uuid4().hex[:8]}")  # not left to the worker's later tests

    async def scenario() -> tuple[bytes, int, str, int, str]:
        box = LeanDockerRuntime(vf.DockerConfig(image=images["harness"], allow=[]))
        await box.start()
        try:
            echo = await box.open_process(["cat"], {})
            await echo.write(b"ping\n")
            answer = await anext(echo.stdout.__aiter__())
            group = await box.open_process(["sh", "-c", "sleep 300 & sleep 300"], {})
            await group.kill()
            killed = await group.wait()
            left = (
                await box.run(["sh", "-c", "ps -eo stat=,args= | awk '$1 !~ /^Z/ && $2 == \"sleep\" && $3 == 300'"], {})
            ).stdout
            exec_ids = [e for e in (engine_client().api.inspect_container(box.container)["ExecIDs"] or [])]
        finally:
            await box.stop()
        ended = await asyncio.wait_for(echo.wait(), 10)  # the box's removal ended the live exec
        gone = ""
        for exec_id in exec_ids:
            try:
                engine_client().api.exec_inspect(exec_id)
            except docker.errors.NotFound:
                gone += "x"
        return answer, killed, left, ended, gone if len(gone) == len(exec_ids) else "some exec left"

    answer, killed, left, ended, gone = run(scenario())
    assert answer == b"ping\n"
    assert killed != 0 and left == ""  # the background sleep went with the group
    assert ended == lp.KILLED_EXIT and gone  # no exec outlives the box


@pytest.mark.docker
@pytest.mark.parametrize("harness", ["claude_code", "codex", "arena-codex"])
def test_a_live_harness_rollout_on_the_lean_path_scores_full_and_runs_no_docker_cli(harness, images, tmp_path):
    import dataclasses
    import os
    import shutil
    import uuid

    from arena.server import start_in_thread
    from arena_kit.policy import Answer, CallTool, RunShell
    from arena_kit.scripted import ScriptedPolicy
    from arena_testkit.lean_evals import run_path, smoke_request

    script = ScriptedPolicy(
        [RunShell("echo arena-smoke-ok > smoke.txt && cat smoke.txt"), CallTool("note", {"text": "n"}), Answer("DONE")]
    )
    calls, shims = tmp_path / "docker-calls", tmp_path / "bin"
    shims.mkdir()
    (shims / "docker").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {shutil.which("docker")} "$@"\n')
    (shims / "docker").chmod(0o755)
    with start_in_thread(policies={"arena/lean-process": script}) as server:
        request = smoke_request(
            server.url,
            "arena/lean-process",
            images["harness"],
            tmp_path,
            f"process-{harness}-{uuid.uuid4().hex[:8]}",
            runtime_args={"allow": []},
        )
        request = dataclasses.replace(
            request, harness=harness, env={**request.env, "PATH": f"{shims}:{os.environ['PATH']}"}
        )
        outcome = run_path(request, "lean")
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.rewards["wrote_file"]["score"] == 1.0 and episode.metrics["notes"] == 1.0
    assert not calls.exists(), calls.read_text()  # no docker CLI process in the whole rollout
    left = docker.from_env().api.containers(all=True, filters={"label": f"verifiers.run={outcome.run_dir.name}"})
    assert left == []
