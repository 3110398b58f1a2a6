"""The lean docker runtime against a real engine: limits at create, no CLI or helper container, no route out,
and the same answers as verifiers' stock docker runtime for every runtime operation."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import verifiers.v1 as vf
from verifiers.v1.runtimes.docker import DockerRuntime
from verifiers.v1.utils.scope import run_scope

import arena_kit.runtimes.lean_docker.engine as engine
import arena_kit.runtimes.lean_docker.runtime as lean
from arena.vf_hooks import install_host_liveness
from arena_testkit.exec_count import counting_execs
from arena_testkit.rollouts import docker_gateway, http_listener
from arena_kit.runtimes import seccomp
from arena_kit.runtimes.lean_docker.runtime import BOX_CAPABILITIES, LeanDockerRuntime, engine_client

pytestmark = pytest.mark.docker

RESTRICTED = {"allow": [], "memory": 1.0, "cpu": 1.0}


@contextlib.asynccontextmanager
async def started(box: vf.Runtime, env: dict[str, str] | None = None) -> AsyncIterator[vf.Runtime]:
    box.env = dict(env or {})
    try:
        await box.start()
        yield box
    finally:
        await box.stop()


def fetch(url: str, proxy: bool) -> list[str]:
    """argv: python in the box fetches `url` (with or without the proxy env) and prints the status or the error class."""
    opener = "u.build_opener()" if proxy else "u.build_opener(u.ProxyHandler({}))"
    code = (
        "import urllib.request as u, sys\n"
        f"try: print(({opener}).open(sys.argv[1], timeout=5).status)\n"
        "except Exception as e: print('FAIL', type(e).__name__)"
    )
    return ["python3", "-c", code, url]


def test_a_lean_box_runs_without_any_docker_cli_process_or_helper_container(images, monkeypatch):
    async def no_process(*argv: Any, **kwargs: Any) -> None:
        raise AssertionError(f"the lean runtime started a process: {argv[:3]}")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", no_process)
    monkeypatch.setattr(subprocess, "run", no_process)

    def ours() -> set[str]:
        """Names of the containers under this process's run scope (which other tests of the worker share)."""
        listed = engine_client().api.containers(all=True, filters={"label": f"verifiers.run={run_scope()}"})
        return {name.lstrip("/") for container in listed for name in container["Names"]}

    async def scenario() -> tuple[set[str], str]:
        before = ours()
        async with started(LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))) as box:
            await box.write("a/b.txt", b"x")
            assert await box.read("a/b.txt") == b"x"
            assert (await box.run(["true"], {})).exit_code == 0
            await box.run_background(["sleep", "5"], {}, "/tmp/bg.log")
            await box.prepare_execution(["http://127.0.0.1:1/v1"])
            return ours() - before, str(box.container)

    new, box = asyncio.run(scenario())
    assert new == {box}  # the box itself: no listener or iptables helper beside it


def test_the_stock_runtime_spends_cli_processes_and_a_helper_container_where_the_lean_one_spends_none(
    images, monkeypatch
):
    """The defect the lean box removes, measured on both: docker CLI processes (version, run, inspect, probe,
    mkdir, port, `run --network container:` helpers, rm) for one box's life."""
    spawned: list[tuple[str, ...]] = []
    real = asyncio.create_subprocess_exec

    async def record(*argv: Any, **kwargs: Any) -> Any:
        spawned.append(tuple(str(a) for a in argv))
        return await real(*argv, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", record)
    config = vf.DockerConfig(image=images["harness"], **RESTRICTED)

    async def life(box: vf.Runtime) -> int:
        before = len(spawned)
        async with started(box):
            await box.run(["true"], {})
            await box.prepare_execution(["http://127.0.0.1:1/v1"])
        return len(spawned) - before

    stock, lean = asyncio.run(life(DockerRuntime(config))), asyncio.run(life(LeanDockerRuntime(config)))
    helpers = [
        argv for argv in spawned if argv[:2] == ("docker", "run") and any(a.startswith("container:") for a in argv)
    ]
    assert stock >= 7 and len(helpers) == 2  # the listener helper and the iptables helper
    assert lean == 0


def test_the_owner_removes_its_box_after_a_rollout_stamped_it_borrowed(images):
    async def scenario() -> str:
        box = LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))
        async with started(box):
            box.info.borrowed = True  # what `Agent.run(task, runtime=box)` does to the trace's (= the box's) info
        return str(box.container)

    name = asyncio.run(scenario())
    assert engine_client().api.containers(all=True, filters={"name": name}) == []


def test_every_limit_is_set_when_the_box_is_created(images):
    async def scenario() -> dict[str, Any]:
        box = LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED), pids_limit=77)
        async with started(box):
            inspected: dict[str, Any] = engine_client().api.inspect_container(box.container)
            return inspected

    inspected = asyncio.run(scenario())
    host = inspected["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (1024**3, 10**9, 77)
    assert host["CapDrop"] == ["ALL"] and sorted(host["CapAdd"]) == sorted(BOX_CAPABILITIES)
    assert host["SecurityOpt"] == ["no-new-privileges", f"seccomp={seccomp.profile_json()}"]
    labels = inspected["Config"]["Labels"]
    assert labels["verifiers.run"] == run_scope() and labels["arena.managed"] == "true"


def test_a_restricted_lean_box_has_no_route_out_and_its_proxy_closes_after_setup(images):
    gateway = docker_gateway()

    async def scenario(gateway_port: int, host_port: int) -> dict[str, str]:
        box = LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))
        async with started(box):
            callback = box.host_url(f"http://127.0.0.1:{host_port}/")
            gateway_url = f"http://{gateway}:{gateway_port}/"

            async def seen(argv: list[str]) -> str:
                return (await box.run(argv, {})).stdout.strip()

            results = {
                "registry-direct": await seen(fetch("https://pypi.org/simple/", proxy=False)),
                "gateway-direct": await seen(fetch(gateway_url, proxy=False)),
                "host-loopback-direct": await seen(fetch(f"http://127.0.0.1:{host_port}/", proxy=False)),
                "gateway-proxy-setup": await seen(fetch(gateway_url, proxy=True)),
                "callback-setup": await seen(fetch(callback, proxy=False)),
            }
            await box.prepare_execution([callback])
            results["gateway-proxy-agent"] = await seen(fetch(gateway_url, proxy=True))
            results["registry-proxy-agent"] = await seen(fetch("https://pypi.org/simple/", proxy=True))
            results["callback-agent"] = await seen(fetch(callback, proxy=False))
            return results

    with http_listener(gateway) as gateway_port, http_listener("127.0.0.1") as host_port:
        seen = asyncio.run(scenario(gateway_port, host_port))
    assert seen["registry-direct"].startswith("FAIL")  # no route out at all
    assert seen["gateway-direct"].startswith("FAIL")  # nor to the host's bridge address
    assert seen["host-loopback-direct"].startswith("FAIL")  # the box's loopback is its own
    assert seen["gateway-proxy-setup"] == "200"  # trusted setup goes out through the proxy, as in stock
    assert seen["gateway-proxy-agent"].startswith("FAIL") and seen["registry-proxy-agent"].startswith("FAIL")
    assert seen["callback-setup"] == seen["callback-agent"] == "200"  # the interception route stays open


async def _operations(box: vf.Runtime) -> list[Any]:
    """Every runtime operation, with the answers that must not depend on the path."""
    out: list[Any] = []
    out.append(await box.run(["sh", "-c", 'echo "$TASKVAR $ONE" "$PWD"; id -un; echo err >&2; exit 7'], {"ONE": "1"}))
    out.append(await box.run(["no-such-binary"], {}))
    out.append(await box.run(["sh", "-c", "printf '\\377\\000'"], {}))
    await box.write("deep/er/file.bin", bytes(range(256)) * 40)
    out.append(await box.read("deep/er/file.bin") == bytes(range(256)) * 40)
    out.append(await box.read("deep/er/file.bin", max_bytes=10_240))
    for bad in (box.read("deep/er/file.bin", max_bytes=100), box.read("missing.txt"), box.write("/proc/nope/x", b"")):
        try:
            await bad
            out.append("no error")
        except vf.SandboxError as error:
            out.append(("SandboxError", str(error)))
    nobody = box.with_user("nobody", home="/tmp")
    out.append(await nobody.run(["sh", "-c", "id -un; echo $HOME; touch /root/x"], {}))
    await nobody.write("/tmp/mine.txt", b"n")
    out.append(await box.run(["stat", "-c", "%U", "/tmp/mine.txt"], {}))
    await box.run_background(["sh", "-c", "echo background $TASKVAR"], {}, "/app/bg.log")
    for _ in range(100):
        if (await box.run(["test", "-s", "/app/bg.log"], {})).exit_code == 0:
            break
        await asyncio.sleep(0.05)
    out.append(await box.read("/app/bg.log"))
    try:
        await asyncio.wait_for(box.run(["sleep", "30"], {}), 1.0)
        out.append("no timeout")
    except TimeoutError:
        out.append("timeout")
    out.append(await box.run(["echo", "still usable"], {}))
    process = await box.open_process(["sh", "-c", "read line; echo got $line"], {})
    await process.write(b"it\n")
    out.append((b"".join([chunk async for chunk in process.stdout]), await process.wait()))
    return out


def test_lean_and_stock_boxes_answer_every_runtime_operation_alike(images, monkeypatch):
    # The stock box as every Arena vf-eval runs it: with the host-liveness hooks (`arena.vf_hooks`),
    # whose marking of a failed in-box read or write the lean box does itself.
    for name in ("alive", "_read", "write"):  # the hooks patch DockerRuntime (docker, podman), not Apptainer's base
        monkeypatch.setattr(DockerRuntime, name, getattr(DockerRuntime, name))  # restored after the test
    assert install_host_liveness()
    config = vf.DockerConfig(image=images["harness"], **RESTRICTED)

    async def scenario() -> tuple[list[Any], list[Any]]:
        async with started(DockerRuntime(config), {"TASKVAR": "t"}) as stock:
            reference = await _operations(stock)
        async with started(LeanDockerRuntime(config), {"TASKVAR": "t"}) as box:
            answers = await _operations(box)
        return reference, answers

    reference, answers = asyncio.run(scenario())
    assert answers == reference
    assert answers[0] == vf.ProgramResult(7, "t 1 /app\nroot\n", "err\n")  # the comparison saw real answers


def test_an_exec_the_engine_cannot_start_exits_126_as_the_cli_does(images, monkeypatch):
    monkeypatch.setattr(engine, "EXIT_CODE_WAIT_S", 0.5)

    async def scenario() -> vf.ProgramResult:
        async with started(LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))) as box:
            result: vf.ProgramResult = await box.with_user("no-such-user").run(["true"], {})
            return result

    assert asyncio.run(scenario()).exit_code == 126


def test_the_runner_is_written_and_run_in_one_exec_as_a_write_then_a_run_would(images):
    program = ["sh", "-c", 'cat /tmp/s/run.sh; readlink /proc/self/fd/0; echo "$TASKVAR $ONE" >&2; exit 3']
    config = vf.DockerConfig(image=images["harness"], **RESTRICTED)

    async def scenario() -> tuple[Any, ...]:
        async with started(LeanDockerRuntime(config), {"TASKVAR": "t"}) as box:
            await box.write("/tmp/s/run.sh", b"echo first\n")
            apart = await box.run_program(program, {"ONE": "1"})
            await box.run(["rm", "-r", "/tmp/s"], {})
            with counting_execs() as execs:
                together = await box.run_program_with_file("/tmp/s/run.sh", b"echo first\n", program, {"ONE": "1"})
            failures = []
            for attempt in (
                box.write("/proc/nope/x", b"x"),
                box.run_program_with_file("/proc/nope/x", b"x", ["touch", "/tmp/ran"], {}),
            ):
                with pytest.raises(vf.SandboxError) as caught:
                    await attempt
                failures.append(str(caught.value))
            ran = (await box.run(["test", "-e", "/tmp/ran"], {})).exit_code == 0
            # The program's own stderr and exit code are its result, whatever they say (the old
            # marker of a failed write, printed by the program, was taken for one).
            forged = "arena-lean: the write before the program failed"
            own = await box.run_program_with_file("/tmp/s/f", b"x", ["sh", "-c", f"echo '{forged}' >&2; exit 1"], {})
            assert own == vf.ProgramResult(1, "", forged + "\n")
            return apart, together, failures, ran, execs

    apart, together, failures, ran, execs = asyncio.run(scenario())
    assert together == apart == vf.ProgramResult(3, "echo first\n/dev/null\n", "t 1\n")
    assert len(execs) == 1
    assert failures[0] == failures[1] and failures[0].startswith("in the running box: write '/proc/nope/x': ")
    assert not ran  # the program does not run after a failed write


def test_the_lean_bash_harness_spends_one_exec_on_its_runner(images):
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.harnesses.bash.harness import BashHarnessConfig

    from arena_kit.harnesses.arena_bash.harness import LeanBashHarness

    harness = LeanBashHarness(BashHarnessConfig.model_validate({"id": "arena-bash"}))
    ctx = ModelContext(model="arena/m", client=vf.EvalClientConfig(base_url="http://127.0.0.1:9/v1"))

    class Trace:
        id = "trace-1"

    async def scenario() -> tuple[vf.ProgramResult, list[list[str]]]:
        async with started(LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))) as box:
            data = vf.TaskData(prompt="hi", system_prompt=None)
            with counting_execs() as execs:
                result: vf.ProgramResult = await harness.launch(
                    ctx, Trace(), box, "http://127.0.0.1:9/v1", "s", {}, data
                )
            return result, execs

    result, execs = asyncio.run(scenario())
    assert len(execs) == 1, execs
    assert result.exit_code != 0 and "Connection refused" in result.stderr  # the runner ran, and found no model


UV_SCRIPT = (
    '# /// script\n# requires-python = ">=3.9"\n# dependencies = []\n# ///\nimport sys\nprint("ran", sys.argv[1:])\n'
)


def test_a_uv_script_is_prepared_in_one_exec_into_the_argv_and_program_the_stock_box_prepares(images):
    config = vf.DockerConfig(image=images["harness"], **RESTRICTED)

    async def prepared(box: vf.Runtime) -> tuple[list[str], vf.ProgramResult, vf.ProgramResult]:
        argv = await box.prepare_uv_script(UV_SCRIPT, {"UV_OFFLINE": "true"})
        again = await box.prepare_uv_script(UV_SCRIPT)  # cached: no exec
        assert again == argv
        plain = await box.prepare_uv_script(UV_SCRIPT, activate=False)
        return argv, await box.run([*argv, "a"], {}), await box.run([*plain, "b"], {})

    async def scenario() -> tuple[Any, Any, list[list[str]]]:
        async with started(DockerRuntime(config)) as stock:
            reference = await prepared(stock)
        async with started(LeanDockerRuntime(config)) as box:
            with counting_execs() as execs:
                answers = await prepared(box)
        return reference, answers, execs

    reference, answers, execs = asyncio.run(scenario())
    assert answers == reference
    assert answers[1] == vf.ProgramResult(0, "ran ['a']\n", "") and answers[2].stdout == "ran ['b']\n"
    assert len(execs) == 3, execs  # one to prepare, two to run


def test_a_command_nobody_waits_for_any_more_frees_its_thread_and_connection(images, monkeypatch):
    ended = threading.Event()
    exec_sync = lean.exec_sync

    def watched(*args: Any) -> tuple[int, bytes, bytes]:
        try:
            return exec_sync(*args)
        finally:
            ended.set()

    async def scenario() -> tuple[bool, vf.ProgramResult]:
        async with started(LeanDockerRuntime(vf.DockerConfig(image=images["harness"], **RESTRICTED))) as box:
            monkeypatch.setattr(lean, "exec_sync", watched)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(box.run(["sleep", "30"], {}), 1.0)
            freed = await asyncio.to_thread(ended.wait, 3.0)
            monkeypatch.setattr(lean, "exec_sync", exec_sync)
            return freed, await box.run(["echo", "still usable"], {})

    freed, after = asyncio.run(scenario())
    assert freed, "the exec's thread still waits on a 30 s command nobody awaits"
    assert after == vf.ProgramResult(0, "still usable\n", "")
