"""The warm box pool against a real engine: a pooled box is an unpooled one booted early, a box killed
before its claim is never used, leftovers of a killed process are reaped, and a rollout scores the same."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest
import verifiers.v1 as vf

from arena.reaper import leftovers_since, reap
from arena.server import start_in_thread
from arena_kit.box.isolation import ISOLATION
from arena_kit.policy import Answer, CallTool, RunShell
from arena_kit.runtimes.lean_docker.pool import POOL_LABEL, BoxPool, BoxSpec
from arena_kit.runtimes.lean_docker.runtime import engine_client
from arena_kit.scripted import ScriptedPolicy
from arena_testkit.lean_evals import run_path, smoke_request

pytestmark = pytest.mark.docker

IMAGE = "arena/harness:latest"
SAME = {
    "HostConfig": (
        "NetworkMode",
        "Memory",
        "NanoCpus",
        "PidsLimit",
        "CapDrop",
        "CapAdd",
        "SecurityOpt",
        "ReadonlyRootfs",
        "Tmpfs",
        "PortBindings",
        "Privileged",
        "IpcMode",
        "PidMode",
        "Ulimits",
        "MaskedPaths",
    ),
    "Config": ("Image", "Env", "WorkingDir", "Entrypoint", "Cmd", "User"),
}
"""What must match between a pooled and an unpooled box of one spec (names, ids and clocks differ)."""


@pytest.fixture(scope="module")
def image() -> str:
    """The harness image as built (these tests never build one)."""
    try:
        docker.from_env().images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{IMAGE} is missing: build the images first (`arena images`)")
    return IMAGE


def spec_of(image: str, allow: list[str] | None = None) -> BoxSpec:
    config = vf.DockerConfig(image=image, allow=[] if allow is None else allow, memory=1.0, cpu=1.0)
    return BoxSpec(
        config,
        pids_limit=77,
        nofile=300,
        writable=ISOLATION.writable("/app", "agent"),
        workdir_owner="agent",
        env={"ARENA_TASK": "x"},
    )


def shape(inspected: dict[str, Any]) -> dict[str, Any]:
    shaped = {part: {key: inspected[part].get(key) for key in keys} for part, keys in SAME.items()}
    shaped["Labels"] = {k: v for k, v in inspected["Config"]["Labels"].items() if k != POOL_LABEL}
    shaped["CapAdd"] = sorted(inspected["HostConfig"].get("CapAdd") or [])
    return shaped


@pytest.mark.slow
@pytest.mark.parametrize("allow", [[], ["*"]], ids=["restricted", "open"])
def test_a_pooled_box_has_the_limits_mounts_caps_env_and_network_of_an_unpooled_one(image, allow):
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], str]:
        spec = spec_of(image, allow)
        unpooled = spec.box()
        pool = BoxPool(size=1)
        pool.plan(spec, 1)
        try:
            await unpooled.start()
            claim = await pool.claim(spec)
            assert claim.pooled
            api = engine_client().api
            both = api.inspect_container(unpooled.container), api.inspect_container(claim.box.container)
            # the agent's view in the pooled box: its user, and no route out when restricted
            result = await claim.box.run(["sh", "-c", "id -un; cat /proc/net/route | wc -l"], {})
            pool.release(claim.box)
            return both[0], both[1], result.stdout
        finally:
            await unpooled.stop()
            await pool.close()

    unpooled, pooled, said = asyncio.run(scenario())
    assert shape(pooled) == shape(unpooled)
    assert pooled["Config"]["Labels"][POOL_LABEL] and POOL_LABEL not in unpooled["Config"]["Labels"]
    if not allow:
        assert (
            pooled["HostConfig"]["NetworkMode"] == "none" and said.split()[-1] == "1"
        )  # the route table's header only


def test_a_pooled_box_killed_before_its_claim_is_removed_and_never_used(image):
    async def scenario() -> tuple[str, str, list[Any]]:
        spec = spec_of(image)
        pool = BoxPool(size=2)
        pool.plan(spec, 2)
        try:
            while pool.ready(spec) < 2:
                await asyncio.sleep(0.05)
            killed = pool._slots[spec.key].ready[0].container
            subprocess.run(["docker", "kill", killed], check=True, capture_output=True)
            claim = await pool.claim(spec)
            used = str(claim.box.container)
            pool.release(claim.box)
        finally:
            await pool.close()
        return str(killed), used, engine_client().api.containers(all=True, filters={"name": killed})

    killed, used, left = asyncio.run(scenario())
    assert used != killed and left == []


CHILD = """
import asyncio, sys
import verifiers.v1 as vf
from arena_kit.runtimes.lean_docker.pool import BoxPool, BoxSpec

async def main():
    spec = BoxSpec(vf.DockerConfig(image=sys.argv[1], allow=[]))
    pool = BoxPool(size=2)
    pool.warm(spec)
    while pool.ready(spec) < 2:
        await asyncio.sleep(0.05)
    print("warm", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.slow
def test_the_reaper_removes_the_warm_boxes_a_sigkilled_eval_left(image):
    run = f"pool-reap-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "VF_RUN_ID": run, "PYTHONPATH": os.pathsep.join(sys.path)}
    since = __import__("time").time() - 5
    child = subprocess.Popen([sys.executable, "-c", CHILD, image], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "warm"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    left = leftovers_since(run, since)  # what the post-eval reap removes
    assert len(left) == 2
    labels = [docker.from_env().containers.get(name).labels for name in left]
    assert all(POOL_LABEL in found for found in labels)
    assert sorted(reap(run)) == sorted(left)
    assert leftovers_since(run, since) == []


SCRIPT = ScriptedPolicy(
    [
        RunShell("echo arena-smoke-ok > smoke.txt && cat smoke.txt"),
        CallTool("note", {"text": "hello from the policy"}),
        Answer("DONE"),
    ]
)


@pytest.mark.slow
def test_a_scripted_rollout_scores_the_same_from_a_warm_box(image, tmp_path: Path):
    outcomes = {}
    with start_in_thread(policies={"arena/pool-smoke": SCRIPT}) as server:
        for pool in (0, 2):
            request = smoke_request(
                server.url,
                "arena/pool-smoke",
                image,
                tmp_path,
                f"pool-{pool}-{uuid.uuid4().hex[:8]}",
                runtime_args={"allow": []},
                env_args={"pool": pool},
                max_concurrent=1,
            )
            # vf-eval imports this checkout's Arena (as this process does), not whichever one is installed
            request = dataclasses.replace(
                request, env={"PYTHONPATH": os.pathsep.join([request.env["PYTHONPATH"], *sys.path])}
            )
            outcomes[pool] = run_path(request, "lean", rollouts=3)
    for outcome in outcomes.values():
        outcome.raise_for_failures()
    plain, pooled = outcomes[0].episodes, outcomes[2].episodes
    assert len(pooled) == 3
    assert {json.dumps([e.rewards, e.metrics, e.stop_condition], sort_keys=True) for e in pooled} == {
        json.dumps([e.rewards, e.metrics, e.stop_condition], sort_keys=True) for e in plain
    }
    assert pooled[0].rewards["wrote_file"]["score"] == 1.0
    assert "arena_box" not in plain[0].info
    assert sum(e.info["arena_box"]["pooled"] for e in pooled) >= 2  # the rollouts after the first at least
    assert (
        docker.from_env().api.containers(all=True, filters={"label": f"verifiers.run={outcomes[2].run_dir.name}"}) == []
    )
