"""A prestarted program against a real engine: it runs as the `arena-bash` harness's exec runs it (same user,
groups, env, workdir, stdin), a kill from inside the box is still the agent's fault, and anything but
the very source and user it was started for leaves the exec path to the harness."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
import verifiers.v1 as vf

from verifiers.v1.errors import SandboxError

from arena_kit.errors import AgentKilledBoxError
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.lean_docker.pool import BoxPool, BoxSpec
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

pytestmark = pytest.mark.docker

PATH = "/tmp/vf-scripts-arena/probe.py"
PROBE = b"""
import json, os, sys
def main(argv):
    if argv[0] == "kill":
        os.kill(os.getpid(), 9)
    if argv[0] == "sleep":
        import time
        time.sleep(30)
    print(json.dumps({"argv": sys.argv[1:], "ids": [os.getuid(), os.getgid(), sorted(os.getgroups())], "cwd": os.getcwd(),
                      "env": dict(os.environ), "stdin": os.path.samestat(os.fstat(0), os.stat(os.devnull))}))
if __name__ == "__main__":
    main(sys.argv[1:])
"""
ENV = {"RUN_VAR": "run", "A": "1"}


@pytest.fixture(scope="module")
def image(images: dict[str, str]) -> str:
    return images["harness"]


def spec_of(image: str, prestart: bytes | None = PROBE) -> BoxSpec:
    config = vf.DockerConfig(image=image, allow=[], memory=1.0, cpu=1.0)
    return BoxSpec(
        config,
        pids_limit=77,
        writable=ISOLATION.writable("/app", "agent"),
        workdir_owner="agent",
        env={"ARENA_TASK": "x"},
        prestart=prestart,
    )


async def _claimed(image: str, prestart: bytes | None = PROBE) -> AsyncIterator[tuple[BoxPool, LeanDockerRuntime]]:
    pool = BoxPool(size=1)
    spec = spec_of(image, prestart)
    pool.plan(spec, 1)
    claim = await pool.claim(spec)
    assert claim.pooled
    try:
        yield pool, claim.box.with_user("agent", home="/home/agent")
    finally:
        pool.release(claim.box)
        await pool.close()


async def _exec_path(box: LeanDockerRuntime, args: list[str]) -> vf.ProgramResult:
    """How `LeanBashHarness.launch` runs its runner for an agent user: root writes it, then drops to the agent."""
    drop = ["setpriv", "--reuid=agent", "--regid=agent", "--init-groups", "--"]
    return await box.with_user(None).run_program_with_file(
        PATH, PROBE, [*drop, "python3", "-I", PATH, *args], {**ENV, "HOME": "/home/agent"}
    )


def test_a_prestarted_program_runs_as_the_harness_s_exec_runs_it(image: str) -> None:
    async def body() -> None:
        async for _, box in _claimed(image):
            prestarted = await box.run_prestarted(PROBE, PATH, ["--x", "y"], ENV)
            assert prestarted is not None and prestarted.exit_code == 0, prestarted
            assert box.ran_prestarted
            executed = await _exec_path(box, ["--x", "y"])
            assert executed.exit_code == 0, executed.stderr
            got, want = json.loads(prestarted.stdout), json.loads(executed.stdout)
            assert got == want
            assert got["ids"][0] == 1000 and got["cwd"] == "/app" and got["env"]["RUN_VAR"] == "run" and got["stdin"]

    asyncio.run(body())


def test_a_prestarted_program_killed_from_inside_the_box_is_the_agent_s_fault_as_an_exec_s_is(image: str) -> None:
    async def body() -> None:
        async for _, box in _claimed(image):
            with pytest.raises(AgentKilledBoxError):
                await box.run_prestarted(PROBE, PATH, ["kill"], ENV)
        async for _, box in _claimed(image, prestart=None):
            with pytest.raises(AgentKilledBoxError):
                await _exec_path(box, ["kill"])

    asyncio.run(body())


def test_another_source_another_user_or_no_prestart_leaves_the_exec_to_the_harness(image: str) -> None:
    async def body() -> None:
        async for _, box in _claimed(image):
            assert await box.run_prestarted(PROBE + b"\n# another runner\n", PATH, ["--x"], ENV) is None
            assert await box.run_prestarted(PROBE, PATH, ["--x"], ENV) is None  # used up by the refusal
            assert not box.ran_prestarted
            assert (await _exec_path(box, ["--x"])).exit_code == 0
        async for _, box in _claimed(image):
            assert await box.with_user(None).run_prestarted(PROBE, PATH, ["--x"], ENV) is None
        async for _, box in _claimed(image, prestart=None):
            assert await box.run_prestarted(PROBE, PATH, ["--x"], ENV) is None

    asyncio.run(body())


def test_a_run_whose_engine_stream_is_lost_is_the_engine_s_fault_never_the_agent_s(image: str) -> None:
    """The engine cannot say how the run ended: that is no kill the agent sent (the exec path says the
    same), and the runner left behind is killed."""

    async def body() -> None:
        async for _, box in _claimed(image):
            loaded = box._prestarted
            assert loaded is not None
            running = asyncio.ensure_future(box.run_prestarted(PROBE, PATH, ["sleep"], ENV))
            await asyncio.sleep(1.0)
            loaded.process._writer.transport.abort()  # the engine connection drops mid-run
            with pytest.raises(SandboxError, match="in the running box: prestarted run") as raised:
                await running
            assert not isinstance(raised.value, AgentKilledBoxError)
            # Gone within a few seconds (a killed process lingers until the engine's shim reaps it).
            gone = (
                'for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || { echo gone; exit; }; sleep 0.1; done; echo running'
            )
            probe = await box.run(["sh", "-c", gone, "sh", str(loaded.process.pid)], {})
            assert probe.stdout.strip() == "gone"

    asyncio.run(body())
