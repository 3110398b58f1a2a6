"""What two lean boxes of one spec share no longer (issue 40), read from inside them as their agents: each
agent has a uid of its own (no host user's, not the other box's), named `agent` in its box and owning its
places, also through a borrowed handle (the sqlite tools'); every process has the box's open-file limit;
io_uring and modify_ldt answer ENOSYS; the host-wide file counters read empty."""

from __future__ import annotations

import asyncio
import json
import pwd

import pytest
import verifiers.v1 as vf

from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.agent_uids import FIRST_UID, UIDS
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

pytestmark = pytest.mark.docker

NOFILE = 300
PROBE = r"""
import ctypes, errno, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
def call(number, *args):
    return errno.errorcode.get(ctypes.get_errno(), "ok") if libc.syscall(number, *args) < 0 else "ok"
open("/app/mine", "w").write("x")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "name": os.popen("id -un").read().strip(),
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
    "io_uring_setup": call(425, 8, ctypes.create_string_buffer(120)), "modify_ldt": call(154, 0, None, 0),
    "file-nr": open("/proc/sys/fs/file-nr").read(), "owners": {p: os.stat(p).st_uid for p in ("/app", "/home/agent", "/app/mine")},
}))
"""


def test_two_boxes_of_one_spec_share_no_uid_and_keep_their_limits(images):
    async def scenario() -> tuple[list[dict], dict]:
        boxes = [
            LeanDockerRuntime(
                vf.DockerConfig(image=images["harness"], allow=[]),
                pids_limit=128,
                nofile=NOFILE,
                writable=ISOLATION.writable("/app", "agent"),
                workdir_owner="agent",
                own_uid="agent",
            )
            for _ in range(2)
        ]
        seen = []
        try:
            for box in boxes:
                await box.start()
                result = await box.with_user("agent", home="/home/agent").run(["python3", "-c", PROBE], {})
                assert result.exit_code == 0, result
                seen.append(json.loads(result.stdout))
            async with LeanDockerRuntime.borrow(
                vf.DockerConfig(image=images["harness"]), str(boxes[0].container)
            ) as borrowed:
                lent = await borrowed.with_user("agent").run(["id", "-u"], {})
            return seen, {"uid": int(lent.stdout.strip())}
        finally:
            for box in boxes:
                await box.stop()

    seen, borrowed = asyncio.run(scenario())
    uids = {s["uid"] for s in seen}
    assert len(uids) == 2 and all(FIRST_UID <= uid < FIRST_UID + UIDS for uid in uids), seen
    for uid in uids:
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)  # no host user has it
    for s in seen:
        assert s["gid"] == s["uid"] and s["name"] == "agent" and set(s["owners"].values()) == {s["uid"]}, s
        assert s["nofile"] == [NOFILE, NOFILE] and s["io_uring_setup"] == s["modify_ldt"] == "ENOSYS", s
        assert s["file-nr"] == "", s
    assert borrowed["uid"] == seen[0]["uid"]  # a borrowed handle runs the box's agent as the box's uid
