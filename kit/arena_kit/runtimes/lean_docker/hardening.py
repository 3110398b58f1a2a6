"""What a lean box is created with besides its image: the engine's limits on it, and its agent's own uid.

Every limit is set at create time (no `docker update`): capabilities (all dropped but `BOX_CAPABILITIES`),
no-new-privileges, Arena's seccomp profile (`arena_kit.runtimes.seccomp`), memory, CPUs, PIDs, the open-file
limit of every process and the SysV shared-memory segments of the box (`arena_kit.runtimes.file_table`), a read-only root with bounded tmpfs mounts, the
host-wide counters masked (`MASKED_PATHS`), and, for the image's agent, a uid of the box's own with the
user files that name it (`arena_kit.runtimes.agent_uids`, `box_users`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import docker
import docker.types
from verifiers.v1.errors import SandboxError

from arena_kit.runtimes import seccomp
from arena_kit.runtimes.agent_uids import LEASE_DIR, UidLease, lease_uid
from arena_kit.runtimes.file_table import SHM_SEGMENTS
from arena_kit.runtimes.lean_docker.box_users import USER_FILES, image_users, user_binds

__all__ = [
    "AGENT_UID_LABEL",
    "BOX_CAPABILITIES",
    "MASKED_PATHS",
    "host_limits",
    "mounted_image_id",
    "own_uid_binds",
    "reowned",
]

BOX_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")
"""Everything else is dropped: root in the box can still own, write and signal its files and
processes and switch users (`docker exec --user`), but not make devices, chroot, bind low ports,
open raw sockets or touch the network configuration."""
AGENT_UID_LABEL = "arena.agent-uid"
"""On a box whose agent has a uid of its own: `<user>:<uid>` (what a borrowed handle runs that user's execs as)."""
MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/inode-nr",
    "/proc/sys/fs/inode-state",
    "/proc/sys/fs/dentry-state",
)
"""Docker's default masked paths, and the host-wide file, inode and dentry counters: any box could move them
and any other read them, a channel between boxes (`docs/scoring-and-isolation.md`)."""


def host_limits(
    memory: float | None,
    cpu: float | None,
    pids: int | None,
    nofile: int | None,
    binds: list[str] | None,
    tmpfs: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The engine's `create_host_config` arguments for a box of these limits (None: the engine's default;
    `tmpfs` None: a writable root)."""
    limits: dict[str, Any] = {
        "cap_drop": ["ALL"],
        "cap_add": list(BOX_CAPABILITIES),
        "security_opt": ["no-new-privileges", f"seccomp={seccomp.profile_json()}"],
        "sysctls": {
            "kernel.shmmni": str(SHM_SEGMENTS)
        },  # the box's IPC namespace's: each segment is a file-table entry
    }
    if nofile is not None:
        limits["ulimits"] = [docker.types.Ulimit(name="nofile", soft=nofile, hard=nofile)]
    if binds:
        limits["binds"] = binds
    if memory is not None:
        limits["mem_limit"] = int(memory * 1024**3)
    if cpu is not None:
        limits["nano_cpus"] = int(cpu * 1e9)
    if pids is not None:
        limits["pids_limit"] = pids
    if tmpfs is not None:
        limits["read_only"] = True
        limits["tmpfs"] = dict(tmpfs)
    return limits


def reowned(options: str, uid: int | None) -> str:
    """Tmpfs mount `options` with their owner (`uid=`, `gid=`) made `uid`, the box's own agent uid (None: as they
    are). The only owner a box's writable mounts name is the image's agent (`arena_kit.box.isolation.Isolation.writable`
    sets one exactly when the agent is the user that gets the box's uid), so every owner option is rewritten."""
    if uid is None:
        return options
    return ",".join(
        f"{option.partition('=')[0]}={uid}" if option.startswith(("uid=", "gid=")) else option
        for option in options.split(",")
    )


def mounted_image_id(inspected: Mapping[str, Any]) -> str | None:
    """The image id of an inspected box whose only mounts are its tmpfs and its user files (`box_users`); None when
    the engine mounted anything else (a volume the image declares, a bind): the root's files are not the image's alone."""
    others = [
        mount
        for mount in inspected.get("Mounts") or []
        if not (
            mount.get("Type") == "bind"
            and mount.get("Destination") in USER_FILES
            and str(mount.get("Source") or "").startswith(f"{LEASE_DIR}/")
        )
    ]
    return None if others else (inspected.get("Image") or None)


def own_uid_binds(api: docker.APIClient, image: str, user: str, labels: dict[str, str]) -> tuple[UidLease, list[str]]:
    """A uid leased for a box of `image` whose `user` gets it, and the binds of the user files naming it.

    Raises:
        SandboxError: no uid is free, or the image has no such user.
        docker.errors.DockerException and the transport's errors: the engine failed a call.
    """
    image_id = api.inspect_image(image)["Id"]  # type: ignore[no-untyped-call]
    users = image_users(api, image_id, {**labels, "arena.managed": "true"})
    try:
        lease = lease_uid()
    except RuntimeError as error:
        raise SandboxError(f"box start: {error}") from error
    try:
        return lease, user_binds(users, user, lease.uid, LEASE_DIR / f"{lease.uid}.users")
    except ValueError as error:
        lease.release()
        raise SandboxError(f"box start: {error}; the box's agent cannot have a uid of its own") from error
