"""A lean box's regular files are read from the host without an exec, and never from outside the box:
planted links, `..`, a stopped box and a PID that is not the box's all leave the host's files unread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf

from arena_kit.runtimes.lean_docker.box_files import BoxRoot
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime, engine_client
from arena_testkit.exec_count import counting_execs

pytestmark = pytest.mark.docker

RESTRICTED = {"allow": [], "memory": 1.0, "cpu": 1.0}
WRITABLE = {"/tmp": "rw,size=16m", "/app": "rw,size=16m"}


@contextlib.asynccontextmanager
async def _started(images: dict[str, str]) -> AsyncIterator[LeanDockerRuntime]:
    box = LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED), writable=WRITABLE)
    await box.start()
    try:
        yield box
    finally:
        await box.stop()


async def _sh(box: vf.Runtime, script: str) -> None:
    result = await box.run(["sh", "-c", script], {})
    assert result.exit_code == 0, result


async def _raises(read: Awaitable[bytes]) -> str:
    with pytest.raises(vf.SandboxError) as caught:
        await read
    return str(caught.value)


def test_a_regular_file_is_read_without_an_exec_and_as_the_exec_reads_it(images):
    payload = bytes(range(256)) * 4096  # 1 MiB: more than one chunk

    async def scenario() -> tuple[list[Any], list[list[str]]]:
        async with _started(images) as box:
            await box.write("data/blob.bin", payload)
            await _sh(box, "ln -s /app/data/blob.bin /tmp/link")
            with counting_execs() as execs:
                answers = [
                    await box.read("data/blob.bin") == payload,  # the workdir's tmpfs, relative
                    await box.read("/app/data/blob.bin", max_bytes=len(payload)) == payload,
                    await box.read("/tmp/link") == payload,  # a link inside the box
                    await box.read("/etc/os-release") != b"",  # the read-only image root
                    await _raises(box.read("data/blob.bin", max_bytes=10)),
                ]
            return answers, execs

    answers, execs = asyncio.run(scenario())
    assert answers[:4] == [True, True, True, True]
    assert "over the 10 byte limit" in answers[4]
    assert execs == []


def test_links_and_dots_the_agent_plants_never_reach_the_host_s_files(images, tmp_path: Path):
    # A file only the host has, at a path the box knows: every way to it must fail or read the box's own.
    secret = Path(f"/tmp/arena-host-only-{uuid.uuid4().hex}")
    secret.write_text("HOST")
    try:

        async def scenario() -> tuple[list[str], list[bytes], list[list[str]]]:
            async with _started(images) as box:
                await _sh(
                    box,
                    f"cd /app && ln -s {secret} abs && ln -s ../../../../../..{secret} rel && "
                    f"ln -s /proc/self/root{secret} magic && ln -s /proc/1/root{secret} init && "
                    f"mkdir d && ln -s / d/up",
                )
                missing = [
                    await _raises(box.read(path))
                    for path in ("abs", "rel", "magic", "init", f"../../../../..{secret}", f"d/up{secret}")
                ]
                await _sh(box, f"echo BOX > {secret}")
                with counting_execs() as execs:
                    own = [await box.read(path) for path in ("abs", "rel", f"../../../..{secret}")]
                return missing, own, execs

        missing, own, execs = asyncio.run(scenario())
    finally:
        secret.unlink()
    assert all("No such file" in message for message in missing), missing
    assert own == [b"BOX\n"] * 3
    assert execs == []  # the box's own file, read from the host: inside the box's root


def test_a_file_that_is_not_regular_is_the_exec_s_to_read(images):
    async def scenario() -> tuple[str, list[list[str]]]:
        async with _started(images) as box:
            await _sh(box, "ln -s /dev/zero /app/zeros")
            with counting_execs() as execs:
                message = await _raises(box.read("zeros", max_bytes=10))
            return message, execs

    message, execs = asyncio.run(scenario())
    assert "over the 10 byte limit" in message
    assert len(execs) == 1  # the host opened no device of the box's


def test_kernel_files_and_oversized_ones_are_the_exec_s_to_read(images, monkeypatch):
    """procfs and sysfs compute a file from its reader: read from the host, a planted link to
    /proc/sys/kernel/hostname gave the host's name, and one to /proc/kmsg drained the host's kernel log.
    A file past `MOST_BYTES` (a sparse terabyte, say) is the exec's too, whose read a cancel stops."""
    import arena_kit.runtimes.lean_docker.box_files as box_files

    monkeypatch.setattr(box_files, "MOST_BYTES", 4096)

    async def scenario() -> tuple[list[Any], list[list[str]], str]:
        async with _started(images) as box:
            await _sh(
                box,
                "ln -s /proc/sys/kernel/hostname /app/name && ln -s /proc/kmsg /app/log && "
                "ln -s /sys/kernel/mm/transparent_hugepage/enabled /app/sys && "
                "head -c 5000 /dev/zero > /app/big && head -c 3000 /dev/zero > /app/small && "
                "truncate -s 1T /app/sparse",
            )
            boxed = (await box.run(["cat", "/proc/sys/kernel/hostname"], {})).stdout.encode()
            with counting_execs() as execs:
                answers = [
                    await box.read("name"),
                    await _raises(box.read("log", max_bytes=100)),
                    await box.read("big") == bytes(5000),
                    await _raises(box.read("sparse", max_bytes=8192)),
                    await box.read("small") == bytes(3000),  # within the bound: the host's
                ]
                with contextlib.suppress(vf.SandboxError):  # a kernel without the file: the exec's error
                    await box.read("sys", max_bytes=200)
            return answers, execs, boxed.decode()

    answers, execs, boxed = asyncio.run(scenario())
    assert answers[0] == boxed.encode() and boxed.strip() != socket.gethostname()  # the box's name, not the host's
    assert (
        "Operation not permitted" in answers[1] or "Permission denied" in answers[1]
    )  # the box's root may not read it
    assert answers[2] is True and "over the 8192 byte limit" in answers[3] and answers[4] is True
    names = ["name", "log", "big", "sparse", "sys"]
    assert [[arg for arg in argv if arg in names][-1] for argv in execs] == names


def test_a_path_no_exec_could_take_is_not_read_from_the_host(images):
    async def scenario() -> list[bytes | None]:
        async with _started(images) as box:
            root = box._root
            assert root is not None
            return [
                root.read("/etc/os-release\x00/../../etc/passwd"),
                root.read("/app/\ud800"),
                root.read("/etc/os-release"),
            ]

    cut, surrogate, plain = asyncio.run(scenario())
    assert cut is None and surrogate is None and plain  # the last: the same root reads a plain path


def test_a_read_as_another_user_is_the_exec_s_with_that_user_s_permissions(images):
    async def scenario() -> tuple[bytes, str, list[list[str]]]:
        async with _started(images) as box:
            await _sh(box, "echo private > /app/root-only && chmod 600 /app/root-only")
            with counting_execs() as execs:
                as_root = await box.read("root-only")
                as_nobody = await _raises(box.with_user("nobody").read("root-only"))
            return as_root, as_nobody, execs

    as_root, as_nobody, execs = asyncio.run(scenario())
    assert as_root == b"private\n"
    assert "Permission denied" in as_nobody
    assert [argv[4:6] for argv in execs] == [
        ["sh", "-c"]
    ]  # nobody's read (bounded: `timeout ... cat | head -c`), not root's


def test_a_root_is_read_only_while_its_box_s_init_lives_and_only_for_a_box_s_pid(images):
    async def scenario() -> tuple[bytes | None, bytes | None, str]:
        async with _started(images) as box:
            await box.write("x.txt", b"x")
            root = box._root
            assert root is not None
            before = root.read("/app/x.txt")
            engine_client().api.kill(box.container)
            for _ in range(50):
                if not await box.alive():
                    break
                await asyncio.sleep(0.1)
            after = root.read("/app/x.txt")
            lost = await _raises(box.read("x.txt"))
            return before, after, lost

    before, after, lost = asyncio.run(scenario())
    assert before == b"x" and after is None
    assert "the engine reports the box gone" in lost  # the exec's answer
    # This test's own process is no box: its PID does not name the container in its cgroup.
    assert BoxRoot.pin(os.getpid(), uuid.uuid4().hex) is None


def test_the_exec_s_read_is_bounded_in_bytes_and_time_and_leaves_the_event_loop_free(images, monkeypatch):
    """A FIFO nobody writes, `/dev/zero` and a sparse terabyte, read whole: each ends in a `SandboxError`
    within the read's time limit, having brought at most its byte cap into this process, while the
    event loop keeps ticking."""
    from arena_kit.runtimes import exec_read

    monkeypatch.setattr(exec_read, "READ_S", 3.0)
    monkeypatch.setattr(exec_read, "READ_CAP", 1 << 20)

    async def scenario() -> tuple[list[str], list[float], int]:
        ticks: list[float] = []

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.05)

        async with _started(images) as box:
            await _sh(box, "mkfifo /app/fifo && ln -s /dev/zero /app/zeros && truncate -s 1T /app/sparse")
            ticker = asyncio.create_task(tick())
            try:
                messages = [await asyncio.wait_for(_raises(box.read(path)), 30) for path in ("fifo", "zeros", "sparse")]
            finally:
                ticker.cancel()
            left = (await box.run(["sh", "-c", "ps -eo args | grep -c '[h]ead -c'"], {})).stdout.strip()
            return messages, ticks, int(left or 0)

    messages, ticks, left = asyncio.run(scenario())
    assert "not read within 3 s" in messages[0]
    assert all("over the 1048576 byte limit" in m for m in messages[1:]), messages
    # The loop never waited on a read: a read on the loop would stall it for the FIFO's whole READ_S (3 s), which
    # 2.5 s still catches, while a loaded machine's scheduling hiccups (which broke a 1 s bound) stay under it.
    assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 2.5
    assert left == 0  # nothing of a read lingers in the box
