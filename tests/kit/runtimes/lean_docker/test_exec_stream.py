"""An exec's output is read through one buffer from the upgrade answer on: nothing the engine sends
with the answer is lost, an engine refusal is the docker SDK's error, stdin the process does not read
costs nothing of its words."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from arena_kit.runtimes.lean_docker.engine import exec_sync as _exec_sync

UPGRADED = b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def serve(path: Path, answer: Callable[[socket.socket], None]) -> Iterator[docker.APIClient]:
    """A unix-socket engine whose exec start is `answer` (create and inspect are stubbed)."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)

    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                answer(conn)

    threading.Thread(target=loop, daemon=True).start()
    api = docker.APIClient(base_url=f"unix://{path}", version="1.41")
    api.exec_create = lambda *_a, **_k: {"Id": "e1"}  # type: ignore[method-assign]
    api.exec_inspect = lambda *_a, **_k: {"ExitCode": 0, "Running": False}  # type: ignore[method-assign]
    try:
        yield api
    finally:
        server.close()


@pytest.fixture
def sock_path(tmp_path: Path) -> Path:
    return tmp_path / "engine.sock"


def test_output_that_arrives_with_the_upgrade_answer_is_kept(sock_path: Path) -> None:
    def answer(conn: socket.socket) -> None:
        conn.sendall(UPGRADED + frame(1, b"the answer file\n") + frame(2, b"warn"))
        conn.sendall(frame(1, b"more\n"))

    for api in serve(sock_path, answer):
        assert _exec_sync(api, "box", ["cat", "answer.txt"], {}, None, None, None) == (
            0,
            b"the answer file\nmore\n",
            b"warn",
        )


def test_a_large_output_in_small_frames_is_read_whole(sock_path: Path) -> None:
    chunk = bytes(range(256)) * 16

    def answer(conn: socket.socket) -> None:
        conn.sendall(UPGRADED)
        for _ in range(2048):  # 8 MiB in 4 KiB frames
            conn.sendall(frame(1, chunk))

    for api in serve(sock_path, answer):
        code, out, err = _exec_sync(api, "box", ["cat", "big"], {}, None, None, None)
    assert (code, len(out), err) == (0, 2048 * len(chunk), b"") and out[: len(chunk)] == chunk


def test_an_engine_refusal_is_the_sdk_error_with_the_engine_message(sock_path: Path) -> None:
    def answer(conn: socket.socket) -> None:
        body = b'{"message":"No such exec instance: e1"}'
        conn.sendall(
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )

    for api in serve(sock_path, answer):
        with pytest.raises(docker.errors.NotFound) as caught:
            _exec_sync(api, "box", ["true"], {}, None, None, None)
    assert caught.value.explanation == "No such exec instance: e1"


def test_an_engine_that_hangs_up_before_answering_is_a_connection_error(sock_path: Path) -> None:
    for api in serve(sock_path, lambda conn: None):
        with pytest.raises(ConnectionError):
            _exec_sync(api, "box", ["true"], {}, None, None, None)


def test_stdin_the_process_never_reads_still_gives_its_words(sock_path: Path) -> None:
    def answer(conn: socket.socket) -> None:
        conn.sendall(UPGRADED + frame(2, b"mkdir: cannot create directory: Read-only file system\n"))
        conn.shutdown(socket.SHUT_RD)

    for api in serve(sock_path, answer):
        code, out, err = _exec_sync(api, "box", ["sh", "-c", "cat > /ro/x"], {}, None, None, b"x" * (8 << 20))
    assert err == b"mkdir: cannot create directory: Read-only file system\n" and out == b""
