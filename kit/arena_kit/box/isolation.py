"""Isolation by default: the limits every Arena rollout's box runs under, declared once for every taskset.

A taskset spreads `ISOLATION.task_fields()` into its TaskData and awaits `confine(runtime, pids, agent_user)`
first thing in `Task.setup`. verifiers turns the task fields into `docker run --memory --cpus`, its
restricted network policy (no egress but the interception and host tool servers; NET_ADMIN and
NET_RAW dropped, no-new-privileges, IPv6 off) and a time limit on each stage. Its docker runtime has
no PIDs option, so `confine` sets one on the live container with `docker update` — task setup runs
before the harness is installed or the agent starts, so no agent process ever runs without it.

The agent is not root: `agent_user` (uid 1000, baked into every Arena image) runs the harness and
every command the agent sends (verifiers' `TaskData.agent_user`); `confine` hands it the workdir.
On the lean docker path the box's root filesystem is read-only and its writable places are tmpfs
mounts of bounded size (`writable`), counted against the box's memory: a rollout that fills one gets
ENOSPC in its own box and the host disk never sees it. The stock path keeps what verifiers' runtime
allows (a non-root agent; a writable root on the engine's disk).

Overrides, most specific last: a task may declare other values (a task that needs a host opens it in
`network_allow`); a config's `[env.agent.runtime] cpu/memory` and `[env.agent.timeout]` win over the
task (verifiers' precedence); `[env.taskset.task] pids_limit` sets the PIDs limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import BaseModel, ConfigDict, Field

from arena_kit.box.image import BoxImageConfig
from arena_kit.runtimes.file_table import SHM_SEGMENTS, BoxFiles, box_files

__all__ = [
    "ISOLATION",
    "Isolation",
    "IsolationTaskConfig",
    "box_limits",
    "confine",
    "pids_update_argv",
    "stock_box_options",
]

logger = logging.getLogger(__name__)

UPDATE_TIMEOUT_S = 60.0
CONTAINER_ENGINES = ("docker", "podman")


class Isolation(BaseModel):
    """Per-rollout limits. Sizes come from measured rollouts (scripted policies on schema-migration:
    setup ≤ 6 s, agent ≤ 81 s, scoring ≤ 0.4 s; peak box 360 MiB / 31 PIDs under claude_code, 185 MiB
    / 73 PIDs under codex) with room for slow real models: 40 turns at 90 s each fit the agent limit."""

    model_config = ConfigDict(frozen=True)

    cpu: float = Field(default=1.0, gt=0)
    """CPU cores per box: on a 2-core host one box can never starve the host or its neighbours."""
    memory: float = Field(default=2.0, gt=0)
    """Memory per box in GB (a hard limit; the host has no swap). A hog is OOM-killed inside its box."""
    pids: int = Field(default=256, ge=32)
    """Processes and threads per box: a fork bomb stops there (lower on a very concurrent eval: `box_limits`).
    Measured peaks: 31 under claude_code, 73 under codex."""
    network_allow: tuple[str, ...] = ()
    """Hosts the box may reach during the agent's turn besides the framework routes (the
    interception and host-side tool servers). Empty: no egress at all."""
    setup_s: float = Field(default=600.0, gt=0)
    """Task + harness setup (measured ≤ 6 s with pre-baked images; a cold install needs minutes)."""
    agent_s: float = Field(default=3600.0, gt=0)
    """The agent's whole solve attempt."""
    finalize_s: float = Field(default=120.0, gt=0)
    scoring_s: float = Field(default=300.0, gt=0)
    agent_user: str = "agent"
    """The unprivileged user the harness and the agent's commands run as (base image: uid/gid 1000)."""
    agent_uid: int = 1000
    agent_home: str = "/home/agent"
    tmp_mb: int = Field(default=512, ge=16)
    """Writable `/tmp` of a read-only box (MiB; scripts, the agent's scratch files)."""
    home_mb: int = Field(default=256, ge=16)
    """Writable home of the agent in a read-only box (MiB; harness config, caches)."""
    workdir_mb: int = Field(default=512, ge=16)
    """Writable workdir of a read-only box (MiB; the task's files: schema-migration's database)."""

    def task_fields(self) -> dict[str, Any]:
        """The TaskData fields that carry these limits (`resources`, `timeout`, `network_allow`, `agent_user`)."""
        return {
            "resources": vf.TaskResources(cpu=self.cpu, memory=self.memory),
            "timeout": vf.TaskTimeout(
                setup=self.setup_s, agent=self.agent_s, finalize=self.finalize_s, scoring=self.scoring_s
            ),
            "network_allow": list(self.network_allow),
            "agent_user": self.agent_user,
        }

    def writable(self, workdir: str, agent_user: str | None) -> dict[str, str]:
        """The tmpfs mounts of a read-only box (path → mount options): `/tmp`, the workdir and, for a
        non-root agent, its home, each owned by whoever runs the agent. `exec`: an agent may run the
        scripts it writes; `nosuid,nodev` (nothing there can raise privileges or expose a device)."""
        owner = f",uid={self.agent_uid},gid={self.agent_uid}" if agent_user == self.agent_user else ""
        mounts = {
            "/tmp": f"rw,exec,nosuid,nodev,size={self.tmp_mb}m,mode=1777",
            workdir: f"rw,exec,nosuid,nodev,size={self.workdir_mb}m,mode=0755{owner}",
        }
        if owner:
            mounts[self.agent_home] = f"rw,exec,nosuid,nodev,size={self.home_mb}m,mode=0700{owner}"
        return mounts


ISOLATION = Isolation()
"""The defaults every Arena taskset declares."""


class IsolationTaskConfig(BoxImageConfig):
    """Task config base for Arena tasksets: the one limit verifiers' config cannot carry, and the box's
    image (`arena_kit.box.image`: the environment's own unless `image` or `image_lock` says otherwise)."""

    pids_limit: int = Field(default=ISOLATION.pids, ge=32)
    """Processes and threads the rollout's box may hold (`docker update --pids-limit`)."""


def box_limits(pids: int) -> BoxFiles:
    """The open-file and PIDs limits of a box whose task asks for `pids`, in this eval on this host: every
    box the eval may hold at once together stays within `arena_kit.runtimes.file_table.SHARE` of the
    host's file table.

    Raises:
        arena_kit.runtimes.file_table.TooConcurrent: the eval is too concurrent for this host's file table.
    """
    return box_files(pids)


@contextlib.contextmanager
def stock_box_options(pids: int) -> Iterator[None]:
    """Create the stock docker boxes of this context (a rollout) with `box_limits(pids)` and Arena's
    seccomp profile (`arena_kit.verifiers_seam.stock_box`; verifiers' runtime has no option for them)."""
    from arena_kit.runtimes.seccomp import profile_path
    from arena_kit.verifiers_seam.stock_box import options

    limits = box_limits(pids)
    with options(
        [
            "--ulimit",
            f"nofile={limits.nofile}:{limits.nofile}",
            "--pids-limit",
            str(limits.pids),
            "--sysctl",
            f"kernel.shmmni={SHM_SEGMENTS}",
            "--security-opt",
            f"seccomp={profile_path()}",
        ]
    ):
        yield


def pids_update_argv(engine: str, container: str, pids: int) -> list[str]:
    return [engine, "update", "--pids-limit", str(pids), container]


async def confine(runtime: vf.Runtime, pids: int, agent_user: str | None) -> None:
    """Set the PIDs limit on the rollout's container (docker or podman; other runtimes bring
    their own limits and are left alone), then hand the workdir to `agent_user` (docker, podman,
    prime), so the agent owns its workdir and nothing else. `agent_user` has no default: a task
    passes its `TaskData.agent_user` (None only for a box whose agent is root).

    Raises:
        vf.SandboxError: the container has no id, or the engine refused or did not answer, or the
            workdir could not be handed over; the rollout then fails at setup rather than run
            unconfined.
    """
    await _limit_pids(runtime, box_limits(pids).pids)
    if agent_user is not None:
        if not await own_uid(runtime, agent_user):
            await _hand_workdir(runtime, agent_user)


OWN_UID = r"""set -e; user=$1; uid=$2; old=$3; workdir=$4
sed -i "s/^$user:\([^:]*\):[0-9]*:[0-9]*:/$user:\1:$uid:$uid:/" /etc/passwd
sed -i "s/^$user:\([^:]*\):[0-9]*:/$user:\1:$uid:/" /etc/group
home=$(awk -F: -v u="$user" '$1 == u { print $6 }' /etc/passwd)
for d in "$home" "/tmp/vf-scripts-$user"; do if [ -e "$d" ]; then chown -R "$uid:$uid" "$d"; fi; done
chown "$uid:$uid" "$workdir"
if [ -n "${UV_CACHE_DIR:-}" ] && [ -d "$UV_CACHE_DIR" ]; then find "$UV_CACHE_DIR" -maxdepth 2 -user "$old" -exec chown "$uid:$uid" {} +; fi
"""
"""Run as root in a stock box before anything runs as `$1`: the user becomes uid and gid `$2` in the image's
user files (which the engine also resolves `docker exec --user` from), and takes its home, verifiers' script
directory for it and the top of the uv cache (where uv opens its lock files) from the image's uid `$3`, and
the workdir `$4` (as `_hand_workdir` would)."""
LEASE_ATTRIBUTE = "arena_agent_uid"


async def own_uid(runtime: vf.Runtime, agent_user: str) -> bool:
    """Give the agent of a stock docker or podman box a uid of its own, leased on this host for the box's life
    (`arena_kit.runtimes.agent_uids`; the lease lives as long as the rollout's runtime), and hand it the
    workdir. A lean box got one at create time; another runtime, or another user than the images' agent, is
    left as it is. Returns whether it did (the workdir handed over too).

    Raises:
        vf.SandboxError: no uid is free, or the box refused the change.
    """
    if (
        hasattr(runtime, "own_uid")
        or agent_user != ISOLATION.agent_user
        or getattr(runtime.info, "type", None) not in CONTAINER_ENGINES
    ):
        return False
    if LEASE_ATTRIBUTE in runtime.__dict__:
        return False
    from arena_kit.runtimes.agent_uids import lease_uid

    try:
        lease = await asyncio.to_thread(lease_uid)
    except (RuntimeError, OSError) as error:
        raise vf.SandboxError(f"cannot give the agent a uid of its own: {error}") from error
    workdir = str(getattr(runtime.info, "workdir", None) or "/app")
    result = await runtime.run(
        ["sh", "-c", OWN_UID, "sh", agent_user, str(lease.uid), str(ISOLATION.agent_uid), workdir], {}
    )
    if result.exit_code != 0:
        lease.release()
        raise vf.SandboxError(f"cannot give {agent_user!r} the uid {lease.uid}: {result.stderr.strip()[-500:]}")
    runtime.__dict__[LEASE_ATTRIBUTE] = lease  # shared by the runtime's user views; released with the last of them
    return True


async def _hand_workdir(runtime: vf.Runtime, agent_user: str) -> None:
    if getattr(runtime, "created_workdir_owner", None) == agent_user:
        return  # a read-only lean box mounts its workdir owned by the agent at create time
    if getattr(runtime.info, "type", None) not in (*CONTAINER_ENGINES, "prime"):
        return
    workdir = str(getattr(runtime.info, "workdir", None) or "/app")
    result = await runtime.run(["chown", f"{agent_user}:", workdir], {})
    if result.exit_code != 0:
        raise vf.SandboxError(f"cannot hand the workdir {workdir} to {agent_user!r}: {result.stderr.strip()[-500:]}")


async def _limit_pids(runtime: vf.Runtime, pids: int) -> None:
    if getattr(runtime, "created_pids_limit", None) == pids:
        logger.debug("runtime %s was created with PIDs limit %d", runtime.name, pids)
        return  # a lean box (arena_kit.runtimes.lean_docker) carries its limits from create time
    engine = getattr(runtime.info, "type", None)
    if engine not in CONTAINER_ENGINES:
        logger.debug("runtime %s has no container to confine", engine)
        return
    container = runtime.info.id
    if not container or shutil.which(str(engine)) is None:
        raise vf.SandboxError(f"cannot set the PIDs limit: no {engine} container id or CLI (container={container!r})")
    argv = pids_update_argv(str(engine), container, pids)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), UPDATE_TIMEOUT_S)
    except BaseException as stopped:
        # A timeout, or a setup cancelled from outside (verifiers' setup timeout, Ctrl-C): the CLI
        # must not outlive it, nor its stderr pipe the event loop (an unreaped transport's __del__
        # then fails with "Event loop is closed"). Reaped and drained, then the cause goes on.
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.communicate()
        if isinstance(stopped, TimeoutError):
            raise vf.SandboxError(
                f"`{' '.join(argv)}` did not finish in {UPDATE_TIMEOUT_S:.0f} s; is the engine overloaded?"
            ) from None
        raise
    if proc.returncode != 0:
        raise vf.SandboxError(
            f"`{' '.join(argv)}` failed ({proc.returncode}): {stderr.decode(errors='replace').strip()}"
        )
