"""The stock path's read of a box's file (verifiers' `docker exec cat`, `arena_kit.verifiers_seam.container_hooks.
bound_box_reads`): a FIFO nobody writes, `/dev/zero` and a sparse terabyte, behind paths an agent can plant (an
answer file scoring reads, its harness's settings), each end in a `SandboxError` within the read's time limit with
at most its byte cap brought into this process. verifiers' own read of the FIFO is still waiting 5 s later."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import verifiers.v1 as vf
from verifiers.v1.runtimes.container import ContainerRuntime
from verifiers.v1.runtimes.docker import DockerRuntime

from arena_kit.runtimes import exec_read
from arena_kit.verifiers_seam.container_hooks import bound_box_reads

pytestmark = pytest.mark.docker


@contextlib.asynccontextmanager
async def _stock(images: dict[str, str]) -> AsyncIterator[DockerRuntime]:
    box = DockerRuntime(vf.DockerConfig(image=images["harness"], memory=1.0, cpu=1.0))
    await box.start()
    try:
        result = await box.run(
            ["sh", "-c", "mkfifo /tmp/fifo && ln -s /dev/zero /tmp/zeros && truncate -s 1T /tmp/sparse"], {}
        )
        assert result.exit_code == 0, result
        yield box
    finally:
        await box.stop()


def test_a_box_file_read_on_the_stock_path_is_bounded_in_bytes_and_time(images, monkeypatch):
    monkeypatch.setattr(exec_read, "READ_S", 3.0)
    monkeypatch.setattr(exec_read, "READ_CAP", 1 << 20)
    monkeypatch.setattr(
        DockerRuntime, "_read", ContainerRuntime._read
    )  # verifiers' own (whatever this process installed), restored after

    async def scenario() -> tuple[bool, list[str], bytes]:
        async with _stock(images) as box:
            try:
                await asyncio.wait_for(box.read("/tmp/fifo"), 5)
                waited = False
            except TimeoutError:
                waited = True  # verifiers' cat still waits on the FIFO
            bound_box_reads()
            messages = []
            for path in ("/tmp/fifo", "/tmp/zeros", "/tmp/sparse"):
                with pytest.raises(vf.SandboxError) as caught:
                    await asyncio.wait_for(box.read(path), 30)
                messages.append(str(caught.value))
            await box.write("/tmp/small", b"hello")
            return waited, messages, await box.read("/tmp/small")

    waited, messages, small = asyncio.run(scenario())
    assert waited
    assert "not read within 3 s" in messages[0]
    assert all("over the 1048576 byte limit" in m for m in messages[1:]), messages
    assert small == b"hello"
