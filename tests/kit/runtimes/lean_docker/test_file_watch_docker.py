"""The file-table watch on real lean boxes (`arena_kit.runtimes.file_watch`): under a share set tiny for the test
(2,000 entries a box), a box whose agent maps 4,000 files it then closes (nofile 64: descriptors could not hold
them) has its processes killed within seconds, stays up, and is recorded as over its bound; its neighbour's
process runs on. Without the watch the mapper would sleep out its 60 s and exit 0: the test fails, bounded."""

from __future__ import annotations

import asyncio
import time

import pytest
import verifiers.v1 as vf

from arena_kit.box.faults import agent_fault, over_bound
from arena_kit.errors import BoxOverBoundError
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.file_watch import watching
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
from arena_kit.verifiers_seam.bounds import stop_box_rollout

pytestmark = pytest.mark.docker

SHARE = 2_000
MAPPINGS = 4_000
HOLD_S = 60
MAPPER = r"""
import ctypes, mmap, os, resource, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] < int(sys.argv[1])  # descriptors could not hold them
for i in range(int(sys.argv[1])):
    fd = os.open(f"/tmp/mapped-{i % 8}", os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 4096)
    assert libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, 0) != ctypes.c_void_p(-1).value
    os.close(fd)  # the mapping alone keeps the file open
time.sleep(float(sys.argv[2]))
"""


def _box(image: str) -> LeanDockerRuntime:
    return LeanDockerRuntime(
        vf.DockerConfig(image=image, allow=[]),
        pids_limit=64,
        nofile=64,
        writable=ISOLATION.writable("/app", "agent"),
        workdir_owner="agent",
        own_uid="agent",
    )


def test_a_box_mapping_past_its_share_is_stopped_and_its_neighbour_runs_on(images):
    async def scenario() -> dict[str, object]:
        attacker, neighbour = _box(images["harness"]), _box(images["harness"])
        with watching(SHARE, stop_box_rollout) as watch:
            try:
                await attacker.start()
                await neighbour.start()
                agent = attacker.with_user("agent", home="/home/agent")
                await neighbour.with_user("agent").run_background(["sleep", "300"], {}, "/tmp/neighbour.log")
                started = time.monotonic()
                mapped = await asyncio.wait_for(
                    agent.run(["python3", "-c", MAPPER, str(MAPPINGS), str(HOLD_S)], {}), HOLD_S + 30
                )
                seen: dict[str, object] = {
                    "exit": mapped.exit_code,
                    "seconds": time.monotonic() - started,
                    "stderr": mapped.stderr[-300:],
                }
                seen["alive"] = await attacker.alive()
                seen["after"] = (await agent.run(["true"], {})).exit_code
                seen["neighbour"] = (await neighbour.run(["pgrep", "-f", "sleep 300"], {})).exit_code
                seen["stopped"] = dict(watch.stopped)
                seen["evidence"] = await attacker._box_evidence()
                seen["id"] = attacker.info.id
                return seen
            finally:
                await attacker.stop()
                await neighbour.stop()

    seen = asyncio.run(scenario())
    assert seen["exit"] == 137 and seen["seconds"] < HOLD_S, seen  # killed, not slept out
    assert seen["alive"] and seen["after"] == 0, seen  # the box stays up: finalize and scoring still reach it
    assert seen["neighbour"] == 0, seen  # the neighbour's process runs on
    stopped = seen["stopped"]
    assert isinstance(stopped, dict) and [box[:12] for box in stopped] == [seen["id"]], seen
    assert f"more than its share of {SHARE}" in str(over_bound(str(seen["id"])))
    assert isinstance(agent_fault(seen["evidence"], 137, "exit 137"), BoxOverBoundError)  # type: ignore[arg-type]
