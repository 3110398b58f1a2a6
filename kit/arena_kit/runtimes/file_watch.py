"""A host-side watch on the host's file table: a box holding more of it than its share, by descriptors or by
files only its memory mappings keep open, is stopped as the agent's fault; no other box is touched.

Why (issue 40): open → mmap → close on a tmpfs or shared memory, or one shared anonymous mapping, keeps a
file-table entry that no descriptor holds, so `nofile` does not bound it (`arena_kit.runtimes.file_table`);
a box could hold millions within its memory limit (about 400 bytes each), and nothing in the kernel bounds
them per box: `vm.max_map_count` is per process and host-wide, the file table host-wide, and cgroup v1's
kernel-memory limit is ignored. What the docs found of other ways is in `docs/scoring-and-isolation.md`.

The design decision: one watch per eval process (`watching`, opened by the env's serving), a daemon thread
named `THREAD_NAME` (so `/proc/<pid>/task/*/comm` shows it runs). About once a second (`INTERVAL_S`) it reads
the host's count (`/proc/sys/fs/file-nr`) and does nothing else while the count stays under its trigger:
the lowest count seen since its last look plus the least headroom any box had then (at most half a share;
no box passes its share without the count rising by its headroom, unless others free as much meanwhile,
which a look every `RESCAN_S` catches). Above it, it looks: each watched box's processes (its cgroup's),
each counted by its open descriptors (`/proc/PID/fd`) plus its file-backed mappings (`/proc/PID/maps`) but
those of its overlay root's files, which the kernel maps through backing files it does not count (a file
mapped twice counts twice: an upper bound). A box past `share` is stopped: its rollout first (`on_over`, which ends its
trace as `boxoverbound_error`), then every process of its cgroup but its init, frozen so nothing forks
meanwhile, killed, thawed. The box stays up, so its rollout's finalize and scoring still reach it, and is
recorded (`arena_kit.box.faults.mark_over_bound`), so whatever failure of its harness follows is typed the
agent's: scored 0, never retried.

Limits: a look costs a directory read and a `maps` read a process (milliseconds for an honest box, about
0.1 s per 65,000 mappings); descriptors of a thread that does not share its process's table are not counted
(they stay bounded by `nofile`); the watch sees only boxes of an engine on this host, and needs root; between two looks a box
may map about 100,000 more files a second of CPU (measured here), so a box can pass its share by that much
before it is stopped, far from the host's table.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from arena_kit.box.faults import CGROUP_ROOT, PROC, box_cgroups, mark_over_bound

__all__ = [
    "INTERVAL_S",
    "RESCAN_S",
    "THREAD_NAME",
    "BoxCgroup",
    "FileTableWatch",
    "box_cgroup",
    "current",
    "headroom",
    "held_files",
    "host_files",
    "mapped_files",
    "over_share",
    "root_device",
    "stop_processes",
    "unwatch_box",
    "watch_box",
    "watching",
]

logger = logging.getLogger(__name__)

INTERVAL_S = 1.0
"""Seconds between two reads of the host's count."""
RESCAN_S = 30.0
"""Seconds after which the watch looks at its boxes whatever the count did."""
FREEZE_S = 2.0
"""Seconds the watch waits for a box's processes to freeze before it kills them anyway."""
STOP_S = 5.0
"""Seconds the watch waits for the rollout's event loop to stop its trace before it kills the processes anyway."""
THREAD_NAME = "arena-filewatch"
FILE_NR = Path("/proc/sys/fs/file-nr")


def host_files(path: Path = FILE_NR) -> int:
    """File-table entries the host holds now (the first field of `file-nr`)."""
    return int(path.read_text().split()[0])


def mapped_files(maps: bytes, uncounted: bytes | None = None) -> int:
    """File-backed mappings in a `/proc/PID/maps` text, but those of files on device `uncounted` (`MAJOR:MINOR` as
    the text writes it): the box's overlay root, whose files the kernel maps through backing files the table does
    not count. Only the fixed fields are read (a mapped file's name is the agent's to choose)."""
    count = 0
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) >= 5 and fields[4] != b"0" and fields[3] != uncounted:
            count += 1
    return count


def held_files(pids: Iterable[int], uncounted: bytes | None = None, proc: Path = PROC) -> int:
    """File-table entries the processes `pids` hold, counted from above: open descriptors plus file-backed mappings
    (`mapped_files`; a file mapped twice counts twice)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):  # a process gone meanwhile holds nothing
            total += len(os.listdir(proc / str(pid) / "fd"))
        with contextlib.suppress(OSError):
            total += mapped_files((proc / str(pid) / "maps").read_bytes(), uncounted)
    return total


def root_device(pid: int, proc: Path = PROC) -> bytes | None:
    """The device of process `pid`'s root file system as `/proc/PID/maps` writes it (`MAJOR:MINOR`, hex)."""
    try:
        device = os.stat(proc / str(pid) / "root").st_dev
    except OSError:
        return None
    return f"{os.major(device):02x}:{os.minor(device):02x}".encode()


def over_share(held: Mapping[str, int], share: int) -> list[str]:
    """The boxes of `held` (box → entries) holding more than `share`."""
    return sorted(box for box, count in held.items() if count > share)


def headroom(held: Mapping[str, int], share: int) -> int:
    """How far the host's count may rise before the watch looks again: the least any box of `held` may still
    take, at most half a share, at least 1."""
    return max(1, min([share // 2, *(share - count for count in held.values())]))


@dataclass(frozen=True)
class BoxCgroup:
    """Where the host lists a box's processes and freezes them."""

    procs: Path
    """`cgroup.procs`: one host PID a line."""
    freeze: Path | None
    """cgroup v1 `freezer.state` (FROZEN/THAWED) or v2 `cgroup.freeze` (1/0); None: no freezer."""


def box_cgroup(box: str, pid: int | None, root: Path = CGROUP_ROOT) -> BoxCgroup | None:
    """The cgroup of box `box` (its full container id), found by its init's host PID `pid` when known, else
    under the engine's usual names (`docker/<id>`, `system.slice/docker-<id>.scope`); None: not on this host."""
    named: dict[str, str] = {}
    """controller ("" for cgroup v2's one tree) → the box's cgroup path under it"""
    for controllers, path in box_cgroups(pid, box) if pid else []:
        named.update(dict.fromkeys(controllers.split(","), path))
    if not named:
        for parent in (f"/docker/{box}", f"/system.slice/docker-{box}.scope"):
            if (root / "pids" / parent.lstrip("/")).is_dir():
                named = {"pids": parent, "freezer": parent}
                break
            if (root / parent.lstrip("/") / "cgroup.procs").is_file():
                named = {"": parent}
                break
    if "pids" in named:  # cgroup v1: one tree a controller
        freezer = root / "freezer" / named["freezer"].lstrip("/") / "freezer.state" if "freezer" in named else None
        return BoxCgroup(root / "pids" / named["pids"].lstrip("/") / "cgroup.procs", freezer)
    if "" in named:
        base = root / named[""].lstrip("/")
        return BoxCgroup(base / "cgroup.procs", base / "cgroup.freeze")
    return None


def _procs(cgroup: BoxCgroup) -> list[int]:
    return [int(line) for line in cgroup.procs.read_text().split()]


def _is_init(pid: int, proc: Path = PROC) -> bool:
    """Whether host PID `pid` is PID 1 of its own PID namespace (a box's init)."""
    with contextlib.suppress(OSError):
        for line in (proc / str(pid) / "status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return line.split()[-1] == "1"
    return False


def _freeze(cgroup: BoxCgroup, frozen: bool) -> bool:
    """Freeze (or thaw) the cgroup; whether it is frozen now (False: no freezer, or it did not freeze in time)."""
    if cgroup.freeze is None:
        return False
    v1 = cgroup.freeze.name == "freezer.state"
    try:
        cgroup.freeze.write_text(("FROZEN" if frozen else "THAWED") if v1 else ("1" if frozen else "0"))
        if not frozen:
            return False
        state = cgroup.freeze.with_name("freezer.state" if v1 else "cgroup.events")
        end = time.monotonic() + FREEZE_S
        while time.monotonic() < end:
            text = state.read_text()
            if (text.strip() == "FROZEN") if v1 else ("frozen 1" in text):
                return True
            time.sleep(0.01)
    except OSError:
        pass
    return False


def stop_processes(cgroup: BoxCgroup) -> int:
    """SIGKILL every process of `cgroup` but the box's init, frozen meanwhile (so none forks away; without
    a freezer, in rounds until none is left): how many were killed."""
    killed = 0
    frozen = _freeze(cgroup, True)
    try:
        for _ in range(1 if frozen else 20):
            left = [pid for pid in _procs(cgroup) if not _is_init(pid)]
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
    except OSError:  # the cgroup went away: nothing left to kill
        pass
    finally:
        if cgroup.freeze is not None:
            _freeze(cgroup, False)
    return killed


StopRollout = Callable[[str, str], bool]
"""Stops the rollout whose box is the first argument (its container id) for the reason given second, on the
event loop it is called on; whether a running rollout was in that box (`verifiers_seam.bounds.stop_box_rollout`)."""


@dataclass
class Watched:
    box: str
    pid: int | None
    on_over: Callable[[str], None] | None
    cgroup: BoxCgroup | None = None
    root: bytes | None = None
    """The device of the box's root file system (`root_device`)."""


class FileTableWatch:
    """The watch over the boxes of one eval process (see the module docstring)."""

    def __init__(
        self,
        share: int,
        *,
        interval_s: float = INTERVAL_S,
        rescan_s: float = RESCAN_S,
        file_nr: Path = FILE_NR,
        stop_rollout: StopRollout | None = None,
    ) -> None:
        self.share = share
        """File-table entries one box may hold (`arena_kit.runtimes.file_table.BoxFiles.per_box`)."""
        self.stop_rollout = stop_rollout
        """How `watch_box` stops a box's rollout past its share (None: only its processes are stopped)."""
        self.interval_s, self.rescan_s, self.file_nr = interval_s, rescan_s, file_nr
        self.looks = 0
        """Times the watch counted its boxes' holdings."""
        self.stopped: dict[str, str] = {}
        """Box → why the watch stopped it."""
        self._boxes: dict[str, Watched] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, box: str, pid: int | None = None, on_over: Callable[[str], None] | None = None) -> None:
        """Watch box `box` (its full container id; `pid` its init's host PID, if known); `on_over(reason)` is
        called, on the watch's thread, before its processes are killed."""
        with self._lock:
            self._boxes[box] = Watched(box, pid, on_over)

    def unwatch(self, box: str) -> None:
        """Stop watching box `box` (its container id, or the start of it)."""
        with self._lock:
            for watched in [watched for watched in self._boxes if box and watched.startswith(box)]:
                del self._boxes[watched]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # the thread's name in /proc (Linux; 15 characters)
            ctypes.CDLL(None).prctl(15, THREAD_NAME.encode()[:15], 0, 0, 0)  # PR_SET_NAME
        try:
            floor, room, last = host_files(self.file_nr), self.share // 2, time.monotonic()
        except (OSError, ValueError, IndexError) as error:
            logger.warning("file-table watch: the host's count is not readable (%s): no watch", error)
            return
        while not self._done.wait(self.interval_s):
            try:
                level = host_files(self.file_nr)
                floor = min(floor, level)
                if level - floor < room and time.monotonic() - last < self.rescan_s:
                    continue
                held = self.look()
                floor, room, last = host_files(self.file_nr), headroom(held, self.share), time.monotonic()
            except Exception:  # noqa: BLE001 - the watch outlives one bad look
                logger.exception("file-table watch: a look failed")

    def look(self) -> dict[str, int]:
        """Count what each watched box holds, stop those past the share, forget boxes gone: box → entries."""
        self.looks += 1
        with self._lock:
            boxes = list(self._boxes.values())
        held: dict[str, int] = {}
        for entry in boxes:
            entry.cgroup = entry.cgroup or box_cgroup(entry.box, entry.pid)
            try:
                if entry.cgroup is None:
                    raise FileNotFoundError(entry.box)
                pids = _procs(entry.cgroup)
                if entry.root is None:
                    init = entry.pid or next((pid for pid in pids if _is_init(pid)), None)
                    entry.root = root_device(init) if init else None
                held[entry.box] = held_files(pids, entry.root)
            except OSError:  # the box is gone (or not on this host)
                self.unwatch(entry.box)
        for box in over_share(held, self.share):
            self._stop(next(entry for entry in boxes if entry.box == box), held[box])
        return held

    def _stop(self, entry: Watched, count: int) -> None:
        reason = (
            f"it held {count} entries of the host's file table (open descriptors and files kept open by memory "
            f"mappings), more than its share of {self.share}"
        )
        logger.warning("file-table watch: stopping box %s: %s", entry.box[:12], reason)
        self.stopped.setdefault(entry.box, reason)
        mark_over_bound(entry.box, reason)
        if entry.on_over is not None:
            with contextlib.suppress(Exception):
                entry.on_over(reason)
        assert entry.cgroup is not None
        stop_processes(entry.cgroup)


_CURRENT: FileTableWatch | None = None


def current() -> FileTableWatch | None:
    """This process's watch, while one runs."""
    return _CURRENT


@contextlib.contextmanager
def watching(share: int, stop_rollout: StopRollout) -> Iterator[FileTableWatch]:
    """Run this process's watch (one per process: inside another, that one) with `share` entries a box; a box
    past its share has its rollout stopped by `stop_rollout`, on the event loop that watched the box."""
    global _CURRENT
    if _CURRENT is not None:
        yield _CURRENT
        return
    watch = _CURRENT = FileTableWatch(share, stop_rollout=stop_rollout)
    watch.start()
    try:
        yield watch
    finally:
        _CURRENT = None
        watch.close()


def watch_box(box: str, pid: int | None = None) -> None:
    """Watch box `box` (full container id; `pid` its init's host PID, if known) under this process's watch, if
    one runs; past its share, its rollout is stopped on the calling event loop (the watch's `stop_rollout`)."""
    watch = _CURRENT
    if watch is None:
        return
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    stop = watch.stop_rollout
    watch.watch(box, pid, None if loop is None or stop is None else _rollout_stopper(loop, box, stop))


def unwatch_box(box: str) -> None:
    if _CURRENT is not None:
        _CURRENT.unwatch(box)


def _rollout_stopper(loop: asyncio.AbstractEventLoop, box: str, stop_rollout: StopRollout) -> Callable[[str], None]:
    def stop(reason: str) -> None:
        done: concurrent.futures.Future[bool] = concurrent.futures.Future()

        def on_loop() -> None:
            try:
                done.set_result(stop_rollout(box, reason))
            except Exception as error:  # noqa: BLE001 - reported to the waiting thread
                done.set_exception(error)

        loop.call_soon_threadsafe(on_loop)
        done.result(STOP_S)

    return stop
