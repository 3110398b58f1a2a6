"""A root agent cannot pass its own failure off as a lost box: with Arena's vf-eval hooks (stock
runtime) and in the lean runtime itself, the engine, not the box, says whether the box is alive, and a
failed in-box read or write in a running box matches no retry rule (`arena.vf_hooks`,
`arena_kit.runtimes.lean_docker.runtime`, `arena.retries`)."""

import asyncio
import subprocess
import uuid

import pytest
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes import DockerConfig, DockerRuntime
from verifiers.v1.trace import Error
from verifiers.v1.utils.retries import RetryState

from arena.retries import retries_table
from arena.vf_hooks import install_host_liveness
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

pytestmark = pytest.mark.docker

FAKE_TRUE = "printf '#!/bin/sh\\nexit 1\\n' > /usr/local/bin/true && chmod +x /usr/local/bin/true"
FAKE_CAT = (
    "printf '#!/bin/sh\\necho \"Error response from daemon: No such container: x\" >&2\\nexit 1\\n' "
    "> /usr/local/bin/cat && chmod +x /usr/local/bin/cat"
)


@pytest.fixture
def box(images):
    name = f"arena-liveness-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            "--label",
            "arena.managed=true",
            "--network",
            "none",
            "--entrypoint",
            "sleep",
            images["base"],
            "infinity",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)


@pytest.fixture
def hooks(monkeypatch):
    for name in ("alive", "_read", "write"):  # the hooks patch DockerRuntime (docker, podman), not Apptainer's base
        monkeypatch.setattr(DockerRuntime, name, getattr(DockerRuntime, name))  # restored after the test
    return install_host_liveness


def _retried(message: str, kind: str = "SandboxError") -> bool:
    """Whether Arena's retry rules re-roll an episode that ended with this error (`kind`: its class name)."""
    error = Error(type=kind, message=message)
    return RetryState(RetryConfig.model_validate(retries_table())).next_error([error]) is error


async def _probe(box: str, setup: str) -> tuple[bool, str]:
    async with DockerRuntime.attach(DockerConfig(), box) as runtime:
        assert (await runtime.run(["sh", "-c", setup], {})).exit_code == 0
        alive = await runtime.alive()
        try:
            await runtime.read("/etc/hostname")
            message = ""
        except SandboxError as error:
            message = str(error)
        return alive, message


def test_without_the_hooks_a_faked_box_death_buys_a_retry(box):
    alive, message = asyncio.run(_probe(box, f"{FAKE_TRUE} && {FAKE_CAT}"))
    assert alive is False  # verifiers' own probe runs the agent's `true`
    assert _retried(message), message  # and the forged read error reads as a lost box


def test_with_the_hooks_the_engine_says_the_box_lives_and_nothing_is_retried(box, hooks):
    assert hooks() is True
    assert hooks() is True  # installed twice (two evals in one process), the error is marked once
    alive, message = asyncio.run(_probe(box, f"{FAKE_TRUE} && {FAKE_CAT}"))
    assert alive is True
    assert message.startswith("in the running box: ") and not _retried(message), message
    assert message.count("in the running box: ") == 1, message


def test_with_the_hooks_a_box_that_really_stopped_is_still_retried(box, hooks):
    hooks()

    async def go() -> tuple[bool, str]:
        async with DockerRuntime.attach(DockerConfig(), box) as runtime:
            subprocess.run(["docker", "stop", "-t", "0", box], check=True, capture_output=True, timeout=120)
            alive = await runtime.alive()
            try:
                await runtime.read("/etc/hostname")
                return alive, ""
            except SandboxError as error:
                return alive, str(error)

    alive, message = asyncio.run(go())
    assert alive is False and _retried(message), message


# The lean twin: a box the lean runtime started itself, as `LeanEnv` lends it to a rollout; no hooks.
LEAN = {"allow": [], "memory": 1.0, "cpu": 1.0}


async def _lean_probe(image: str, setup: str | None, stop: bool = False) -> tuple[bool, list[tuple[str, str]]]:
    box = LeanDockerRuntime(DockerConfig(image=image, **LEAN))
    try:
        await box.start()
        if setup is not None:
            assert (await box.run(["sh", "-c", setup], {})).exit_code == 0
        if stop:
            subprocess.run(["docker", "stop", "-t", "0", box._container], check=True, capture_output=True, timeout=120)
        messages = []
        for operation in (lambda: box.read("/etc/hostname"), lambda: box.write("/etc/hostname", b"x")):
            try:
                await operation()
                messages.append(("", ""))
            except SandboxError as error:
                messages.append((type(error).__name__, str(error)))
        return await box.alive(), messages
    finally:
        await box.stop()


def test_a_forged_box_death_in_a_lean_box_is_not_retried(images):
    alive, messages = asyncio.run(_lean_probe(images["base"], f"{FAKE_TRUE} && {FAKE_CAT}"))
    assert alive is True  # the engine's word, not the agent's `true`
    for kind, message in messages:
        assert (
            kind == "SandboxError" and message.startswith("in the running box: ") and "No such container" in message
        ), message
        assert not _retried(message, kind), message


def test_a_lean_box_that_really_stopped_is_retried(images):
    alive, messages = asyncio.run(_lean_probe(images["base"], None, stop=True))
    assert alive is False
    for kind, message in messages:
        assert kind == "BoxLostError" and _retried(message, kind), (kind, message)
