"""The docker side's CPU, exactly: a cpuacct cgroup holding dockerd, containerd and all they start.

A /proc scan sees the daemons but not the containerd shims' last moments nor runc, whose calls
(create, start, one per exec, kill, delete) last ~25 ms each and are reaped by a shim that itself
exits with its container. Moved into one cgroup, the daemons' children are born in it: its usage
counts every shim and runc call in full (runc's in-box half joins the container's own cgroup, which
the bench counts as the rollout's). Only CPU accounting: the group sets no limit, and `release`
puts every process it moved back where it was when the bench ends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from runtime_bench.procs import DAEMONS, ProcStat, daemon_cpu_seconds, scan

__all__ = ["GROUP", "DockerSideGroup", "cpu_seconds", "enlist", "release", "scope"]

GROUP = "arena-docker-side"
SHIM = "containerd-shim"
"""A shim's comm (`containerd-shim-runc-v2`, cut to 15 characters by the kernel)."""

logger = logging.getLogger(__name__)

_enlisted: DockerSideGroup | None = None
"""The group `enlist` last put the daemons in (None: not done, or not possible here)."""
_origins: dict[int, Path] = {}
"""Every process `enlist` moved: the cgroup directory it came from."""


@dataclass(frozen=True)
class DockerSideGroup:
    """The cgroup and how to read its CPU: cgroup v1 `cpuacct.usage` (ns) or v2 `cpu.stat` (usage_usec)."""

    path: Path
    v2: bool

    def cpu_seconds(self) -> float | None:
        """CPU-seconds the group's processes used since it was made (None: unreadable)."""
        try:
            if not self.v2:
                return int((self.path / "cpuacct.usage").read_text()) / 1e9
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            return None
        return None


def enlist(root: Path = Path("/sys/fs/cgroup"), table: dict[int, ProcStat] | None = None) -> DockerSideGroup | None:
    """Move dockerd, containerd and the running shims into the group (made if missing), or None when
    that cannot be done here (no cgroupfs, not root, no daemon visible): the bench then reads the
    daemons from /proc, without shims and runc, and its report says so."""
    group = DockerSideGroup(root / "cpuacct" / GROUP, v2=False) if (root / "cpuacct").is_dir() else None
    if group is None and (root / "cgroup.controllers").is_file():
        group = DockerSideGroup(root / GROUP, v2=True)
    processes = [
        p.pid for p in (scan() if table is None else table).values() if p.comm in DAEMONS or p.comm.startswith(SHIM)
    ]
    global _enlisted
    _enlisted = None
    if group is None or not processes:
        return None
    try:
        group.path.mkdir(exist_ok=True)
        for pid in processes:
            origin = _cgroup_of(pid, root, group)
            if origin is None or origin == group.path:
                continue  # gone meanwhile, or moved by an earlier level
            try:
                (group.path / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                continue  # a shim that exited meanwhile
            _origins.setdefault(pid, origin)
    except OSError as error:
        logger.warning("docker-side CPU: cannot use cgroup %s (%s); shims and runc are not counted", group.path, error)
        return None
    _enlisted = group if group.cpu_seconds() is not None else None
    return _enlisted


def release() -> None:
    """Put every process `enlist` moved back in the cgroup it came from (those that still run)."""
    global _enlisted
    for pid, origin in _origins.items():
        try:
            (origin / "cgroup.procs").write_text(str(pid))
        except OSError:
            continue  # exited (a shim with its container), or its old group is gone
    _origins.clear()
    _enlisted = None


def _cgroup_of(pid: int, root: Path, group: DockerSideGroup) -> Path | None:
    """The directory of `pid`'s cgroup in the group's hierarchy (None: the process is gone)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (group.v2 and controllers == "") or (not group.v2 and "cpuacct" in controllers.split(",")):
            base = root if group.v2 else group.path.parent
            return base / path.lstrip("/")
    return None


def cpu_seconds(table: dict[int, ProcStat] | None = None) -> float | None:
    """CPU-seconds so far of the docker side: the enlisted group's (None if it cannot be read: never
    mixed with the other source), else dockerd's and containerd's own from /proc (`table`, or a fresh
    scan), without shims and runc."""
    if _enlisted is not None:
        return _enlisted.cpu_seconds()
    return daemon_cpu_seconds(table)


def scope() -> str:
    """What `cpu_seconds` counts, for the report."""
    if _enlisted is not None:
        return "dockerd, containerd, shims and runc (cgroup)"
    return "dockerd + containerd (/proc; shims and runc not counted)"
