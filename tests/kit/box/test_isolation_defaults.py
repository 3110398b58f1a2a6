"""The isolation declaration (`arena_kit.box.isolation`) as verifiers resolves it, and `confine`'s edges."""

import asyncio
import sys
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf
from verifiers.v1.runtimes.docker import DockerConfig
from verifiers.v1.utils.compile import resolve_runtime_config

from arena_kit.box.isolation import ISOLATION, Isolation, confine


def _task(isolation: Isolation) -> vf.Task:
    return vf.Task(vf.TaskData(prompt="p", **isolation.task_fields()))


def test_the_defaults_become_a_limited_restricted_docker_runtime():
    runtime = resolve_runtime_config(DockerConfig(image="arena/base"), _task(ISOLATION))
    assert (runtime.memory, runtime.cpu) == (ISOLATION.memory, ISOLATION.cpu)
    assert runtime.network_restricted and runtime.allow == []


def test_a_task_opens_only_the_hosts_it_declares():
    runtime = resolve_runtime_config(
        DockerConfig(image="arena/base"), _task(ISOLATION.model_copy(update={"network_allow": ("pypi.org",)}))
    )
    assert runtime.network_restricted and runtime.allow == ["pypi.org"]


def test_a_config_value_wins_over_the_task_s():
    runtime = resolve_runtime_config(DockerConfig(image="arena/base", memory=4.0), _task(ISOLATION))
    assert runtime.memory == 4.0 and runtime.cpu == ISOLATION.cpu


def test_every_stage_has_a_time_limit():
    timeout = ISOLATION.task_fields()["timeout"]
    assert None not in (timeout.setup, timeout.agent, timeout.finalize, timeout.scoring)


def test_confine_leaves_a_runtime_without_a_container_alone():
    asyncio.run(confine(SimpleNamespace(info=SimpleNamespace(type="subprocess", id=None)), 64, None))  # type: ignore[arg-type]


def test_confine_refuses_a_container_runtime_without_a_container_id():
    with pytest.raises(vf.SandboxError, match="PIDs limit"):
        asyncio.run(confine(SimpleNamespace(info=SimpleNamespace(type="docker", id=None)), 64, None))  # type: ignore[arg-type]


@pytest.mark.docker
def test_confine_says_what_the_engine_refused():
    with pytest.raises(vf.SandboxError, match="vf-arena-no-such-container"):
        asyncio.run(
            confine(SimpleNamespace(info=SimpleNamespace(type="docker", id="vf-arena-no-such-container")), 64, None)
        )  # type: ignore[arg-type]


@pytest.mark.parametrize("stop", ["cancelled", "timed out"])
def test_a_stopped_confine_reaps_its_engine_cli_and_closes_its_pipe(monkeypatch, stop):
    """A setup cancelled from outside (verifiers' setup timeout) or a hung `docker update` must not
    leave the CLI running, nor its stderr pipe open after the event loop closes."""
    from arena_kit.box import isolation

    spawned: list[asyncio.subprocess.Process] = []
    real = asyncio.create_subprocess_exec

    async def hung_cli(*_argv, **kwargs):
        spawned.append(await real(sys.executable, "-c", "import time; time.sleep(120)", **kwargs))
        return spawned[-1]

    monkeypatch.setattr(isolation.asyncio, "create_subprocess_exec", hung_cli)
    monkeypatch.setattr(isolation.shutil, "which", lambda _name: "/usr/bin/docker")
    monkeypatch.setattr(isolation, "UPDATE_TIMEOUT_S", 0.5 if stop == "timed out" else 120.0)
    box = SimpleNamespace(name="stock", info=SimpleNamespace(type="docker", id="vf-a"))

    async def scenario() -> BaseException:
        task = asyncio.create_task(confine(box, 64, None))  # type: ignore[arg-type]
        if stop == "cancelled":
            while not spawned:
                await asyncio.sleep(0.01)
            task.cancel()
        with pytest.raises((asyncio.CancelledError, vf.SandboxError)) as raised:
            await task
        return raised.value

    try:
        stopped = asyncio.run(scenario())
        assert isinstance(stopped, asyncio.CancelledError if stop == "cancelled" else vf.SandboxError)
        [proc] = spawned
        assert proc.returncode is not None, "the engine CLI outlived the stopped confine"
        assert proc._transport.is_closing(), "its pipe was left open past the event loop"
    finally:
        for proc in spawned:
            if proc.returncode is None:
                proc.kill()
