"""Per-box open-file and process limits sized so every box an eval may run at once together holds at most a
stated share of the host's file table.

The design decision: the host's file table (`fs.file-max`) is one number shared by every process on the
machine, and a process without CAP_SYS_ADMIN that finds it full cannot open a file, a socket or a pipe:
every other box, `docker exec` itself and the host's unprivileged processes fail. No cgroup counts open
files, so the bound is a product of two limits the kernel does enforce per box: at most `pids` processes
(the PIDs cgroup), each with at most `nofile` descriptors (RLIMIT_NOFILE, soft = hard, so no process in
the box can raise it). Files a box passes in flight over unix sockets count against the same RLIMIT_NOFILE
per user, which the box's own uid makes per box (`arena_kit.runtimes.agent_uids`). So

    boxes × pids × nofile ≤ SHARE × fs.file-max

where boxes is the eval's concurrency plus `HEADROOM` (a warm pool's boxes booted ahead, and boxes a
finished rollout released that are still being removed). `nofile` is the budget per process at the
task's PIDs limit; when that falls under `NOFILE_FLOOR` (a very concurrent eval on a small host) the PIDs
limit comes down instead, never under `PIDS_FLOOR`: past that the eval is refused with the numbers.

Two holdings have no descriptor, so `nofile` does not bound them. A SysV shared-memory segment is a
file-table entry from `shmget` to its removal: the box's IPC namespace allows `SHM_SEGMENTS` of them
(`kernel.shmmni`, set per box), taken from its budget. A file kept open only by a memory mapping (open,
mmap, close; a shared anonymous mapping) holds an entry up to `vm.max_map_count` mappings a process, which
no per-box kernel limit bounds: the host-side watch (`arena_kit.runtimes.file_watch`) stops a box whose
descriptors and file mappings together pass `BoxFiles.per_box`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from arena_kit.errors import TooConcurrent
from arena_kit.records import CONCURRENCY_ENV

__all__ = [
    "DEFAULT_CONCURRENCY",
    "HEADROOM",
    "NOFILE_CEILING",
    "NOFILE_FLOOR",
    "PIDS_FLOOR",
    "SHARE",
    "SHM_SEGMENTS",
    "BoxFiles",
    "box_files",
    "eval_concurrency",
    "host_file_max",
]

SHARE = 0.25
"""The most of the host's file table all of an eval's boxes together may hold."""
HEADROOM = 2
"""Boxes alive beside the eval's concurrency: a warm pool boots this many ahead (`arena_kit.envs.lean.AUTO_HEADROOM`),
and a released box is removed in the background."""
DEFAULT_CONCURRENCY = 8
"""The concurrency assumed when the eval's is not known (`CONCURRENCY_ENV` unset: a vf-eval not launched by Arena)."""
NOFILE_FLOOR = 128
"""The fewest descriptors a box's process gets: measured peaks are 40-odd (claude, codex app-server, node)."""
NOFILE_CEILING = 20_000
"""The most: the engine's default before these limits (a box at low concurrency on a big host)."""
PIDS_FLOOR = 96
"""The fewest processes and threads a box gets: codex peaks at 73."""
SHM_SEGMENTS = 128
"""SysV shared-memory segments a box may hold (`kernel.shmmni` of its IPC namespace; the kernel's default is
4,096): each is a file-table entry no process holds. No image uses them; PostgreSQL takes one."""
FILE_MAX = Path("/proc/sys/fs/file-max")


@dataclass(frozen=True)
class BoxFiles:
    """The limits every box of an eval gets, and what they sum to."""

    nofile: int
    """RLIMIT_NOFILE of every process in the box, soft and hard."""
    pids: int
    """Processes and threads in the box (the PIDs cgroup)."""
    boxes: int
    """Boxes the eval may hold at once (its concurrency plus `HEADROOM`)."""
    file_max: int

    @property
    def per_box(self) -> int:
        """File-table entries one box may hold by descriptors and file mappings together (what the watch,
        `arena_kit.runtimes.file_watch`, stops a box past): its share of the budget, less its SysV segments."""
        return int(SHARE * self.file_max) // self.boxes - SHM_SEGMENTS

    @property
    def most_files(self) -> int:
        """File-table entries every box together may hold: boxes × (`per_box` + `SHM_SEGMENTS`), at least
        boxes × (pids × nofile + `SHM_SEGMENTS`)."""
        return self.boxes * (self.per_box + SHM_SEGMENTS)

    @property
    def share(self) -> float:
        """`most_files` as a share of the host's file table."""
        return self.most_files / self.file_max


def host_file_max(path: Path = FILE_MAX) -> int:
    """The host's `fs.file-max` (a kernel that reports none, or more than 2^62, counts as 2^62)."""
    try:
        value = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 1 << 62
    return min(value, 1 << 62) if value > 0 else 1 << 62


def eval_concurrency(environ: dict[str, str] | None = None) -> int:
    """The eval's concurrency (`CONCURRENCY_ENV`), else `DEFAULT_CONCURRENCY`."""
    value = (os.environ if environ is None else environ).get(CONCURRENCY_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_CONCURRENCY


def box_files(pids: int, concurrency: int | None = None, file_max: int | None = None) -> BoxFiles:
    """The limits of every box of an eval of `concurrency` (None: `eval_concurrency()`) whose tasks ask for
    `pids` processes, on a host whose file table holds `file_max` (None: this host's).

    Raises:
        TooConcurrent: even `PIDS_FLOOR` processes with `NOFILE_FLOOR` descriptors each, in every box, would
            pass `SHARE` of the file table (the message says the concurrency this host allows).
    """
    file_max = host_file_max() if file_max is None else file_max
    boxes = (eval_concurrency() if concurrency is None else concurrency) + HEADROOM
    budget = int(SHARE * file_max) // boxes - SHM_SEGMENTS  # descriptors one box may hold
    nofile = min(NOFILE_CEILING, budget // pids)
    if nofile >= NOFILE_FLOOR:
        return BoxFiles(nofile, pids, boxes, file_max)
    fewer = budget // NOFILE_FLOOR
    if fewer < PIDS_FLOOR:
        most = int(SHARE * file_max) // (PIDS_FLOOR * NOFILE_FLOOR + SHM_SEGMENTS) - HEADROOM
        raise TooConcurrent(
            f"{boxes} boxes at once cannot each get {PIDS_FLOOR} processes of {NOFILE_FLOOR} open files within "
            f"{SHARE:.0%} of this host's file table (fs.file-max {file_max}): run at most {max(most, 0)} rollouts at once"
        )
    return BoxFiles(NOFILE_FLOOR, min(pids, fewer), boxes, file_max)
