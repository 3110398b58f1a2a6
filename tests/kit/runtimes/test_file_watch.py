"""The file-table watch (`arena_kit.runtimes.file_watch`), without an engine: what it counts, when it looks, and
that a process holding more mapped files than a tiny test share is killed while its neighbour is untouched.

Every holding here is a few hundred shared anonymous mappings (each a file-table entry with no descriptor,
what `nofile` cannot bound), under a share of 200: nothing near the host's table."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena_kit.box.faults import BoxEvidence, agent_fault, over_bound
from arena_kit.errors import BoxOverBoundError
from arena_kit.runtimes import file_watch
from arena_kit.runtimes.file_watch import BoxCgroup, FileTableWatch, headroom, held_files, mapped_files, over_share

MAPPER = """
import ctypes, mmap, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
for _ in range(int(sys.argv[1])):  # one shared anonymous mapping: a file (shmem) no descriptor holds
    assert libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0) != ctypes.c_void_p(-1).value
print("mapped", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_the_decision_stops_only_boxes_past_their_share():
    assert over_share({"a": 100, "b": 201, "c": 200}, 200) == ["b"]
    assert over_share({}, 200) == []
    assert headroom({"a": 150}, 200) == 50  # the nearest box to its share sets how far the count may rise
    assert headroom({"a": 10}, 200) == 100  # at most half a share
    assert headroom({"a": 250}, 200) == 1


MAPS = b"""\
5581d5a1e000-5581d5a48000 r--p 00000000 00:36 1516612                    /usr/bin/python3.11
7f0d4c000000-7f0d4c021000 rw-p 00000000 00:00 0
7f0d4d1f0000-7f0d4d1f1000 r--p 00000000 00:3f 2                          /tmp/a
7f0d4d1f1000-7f0d4d1f2000 r--s 00000000 00:01 62469                      /dev/zero (deleted)
7f0d4d1f2000-7f0d4d1f3000 r--p 00000000 00:3f 3                          /tmp/b 00:36 1 x 00:00 0
7ffd5b7c6000-7ffd5b7e7000 rw-p 00000000 00:00 0                          [stack]
"""


def test_counted_mappings_are_file_backed_and_not_the_overlay_root_s():
    # the overlay's own file maps through a backing file the table does not count; a name cannot pass for a device
    assert mapped_files(MAPS, b"00:36") == 3
    assert mapped_files(MAPS) == 4


def test_descriptors_and_counted_mappings_both_count(tmp_path):
    (tmp_path / "7" / "fd").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "7" / "fd" / str(i)).touch()
    (tmp_path / "7" / "maps").write_bytes(MAPS)
    assert held_files([7, 8], b"00:36", proc=tmp_path) == 6  # a process gone (8) holds nothing


def test_a_box_the_host_stopped_over_a_bound_is_the_agent_s_fault_however_its_harness_failed():
    fault = agent_fault(BoxEvidence(running=True, over_bound="it held too much"), 137, "exit 137")
    assert isinstance(fault, BoxOverBoundError) and "it held too much" in str(fault)
    assert isinstance(agent_fault(BoxEvidence(running=False, over_bound="x"), None, "box gone"), BoxOverBoundError)
    assert agent_fault(BoxEvidence(running=False), None, "box gone") is None  # without the host's record: the host's


def _watch_of(tmp_path: Path, share: int, **boxes: subprocess.Popen[str]) -> FileTableWatch:
    watch = FileTableWatch(share)
    for name, process in boxes.items():
        procs = tmp_path / f"{name}.procs"
        procs.write_text(f"{process.pid}\n")
        watch.watch(f"{name}{'0' * 60}", process.pid)
        watch._boxes[f"{name}{'0' * 60}"].cgroup = BoxCgroup(procs, None)  # a stand-in cgroup listing one host process
    return watch


def _start(count: int, hold_s: float) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", MAPPER, str(count), str(hold_s)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "mapped"
    return process


@pytest.mark.slow
def test_a_look_kills_the_process_past_its_share_and_leaves_its_neighbour(tmp_path):
    hog, neighbour = _start(600, 60), _start(20, 60)
    try:
        watch = _watch_of(tmp_path, 200, hog=hog, neighbour=neighbour)
        held = watch.look()
        assert held[f"hog{'0' * 60}"] >= 600 and held[f"neighbour{'0' * 60}"] < 200, held
        assert hog.wait(10) == -9  # killed, not left to its 60 s
        assert neighbour.poll() is None
        assert (
            list(watch.stopped) == [f"hog{'0' * 60}"]
            and "more than its share of 200" in watch.stopped[f"hog{'0' * 60}"]
        )
        assert over_bound(f"hog{'0' * 60}") is not None and over_bound(f"neighbour{'0' * 60}") is None
    finally:
        for process in (hog, neighbour):
            process.kill()
            process.wait()


@pytest.mark.slow
def test_the_watch_reads_only_the_host_s_count_until_it_rises_by_the_headroom(tmp_path, monkeypatch):
    count = tmp_path / "file-nr"
    count.write_text("5000\t0\t100000\n")
    reads: list[int] = []
    read = file_watch.host_files

    def recorded(path: Path = file_watch.FILE_NR) -> int:
        level = read(path)
        reads.append(level)
        return level

    def decided(level: int, times: int = 2) -> None:
        """Wait until the watch has read `level` and then read again: it decided on `level` (no fixed
        sleep, which a starved watch thread can outlast: it then never saw a level the test relies on)."""
        end = time.monotonic() + 10
        while reads.count(level) < times and time.monotonic() < end:
            time.sleep(0.01)
        assert reads.count(level) >= times, reads[-20:]

    monkeypatch.setattr(file_watch, "host_files", recorded)
    watch = FileTableWatch(1000, interval_s=0.02, rescan_s=3600, file_nr=count)
    watch.start()
    try:
        decided(5000, 3)  # the first read is the floor's, before the first tick
        assert watch.looks == 0  # idle: one read of the count a tick, nothing else
        count.write_text("5499\t0\t100000\n")
        decided(5499)
        assert watch.looks == 0  # under half a share above the lowest count seen
        count.write_text("4000\t0\t100000\n")  # others freed files: the floor follows
        decided(4000)
        count.write_text("4500\t0\t100000\n")
        end = time.monotonic() + 10
        while watch.looks == 0 and time.monotonic() < end:
            time.sleep(0.02)
        assert watch.looks == 1
    finally:
        watch.close()


def _thread_names() -> set[str]:
    """The names of this process's threads, as the kernel reports them."""
    names = set()
    for comm in Path("/proc/self/task").glob("*/comm"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a thread that ends as it is read
            names.add(comm.read_text().strip())
    return names


@pytest.mark.slow
def test_the_watch_looks_on_its_own_thread_and_stops_the_box_s_rollout_first(tmp_path):
    hog = _start(600, 60)
    stops: list[str] = []
    try:
        watch = _watch_of(tmp_path, 200, hog=hog)
        watch._boxes[f"hog{'0' * 60}"].on_over = stops.append
        watch.interval_s, watch.rescan_s = 0.05, 0.0  # look every tick
        watch.start()
        assert hog.wait(10) == -9
        assert len(stops) == 1 and "more than its share" in stops[0]
        assert file_watch.THREAD_NAME in _thread_names()
        watch.close()
        assert watch._thread is not None and not watch._thread.is_alive()
        # join() returns once Python is done with the thread; the kernel's thread may outlive it by a moment
        deadline = time.monotonic() + 5
        while file_watch.THREAD_NAME in _thread_names() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert file_watch.THREAD_NAME not in _thread_names()
    finally:
        hog.kill()
        hog.wait()


def test_a_box_past_its_share_has_its_rollout_stopped_by_the_stopper_the_watch_was_handed(monkeypatch):
    """The watch is handed how a rollout is stopped (`watching(share, stop_rollout)`); it imports no seam to do it,
    and calls it on the event loop that watched the box, from the watch's own thread."""
    box, calls = "ab" * 32, []

    def stop(stopped: str, reason: str) -> bool:
        calls.append((stopped, reason, asyncio.get_running_loop() is loop))
        return True

    monkeypatch.setattr(FileTableWatch, "start", lambda self: None)  # no looking thread: the test calls on_over itself
    with file_watch.watching(1000, stop) as watch:

        async def watched() -> None:
            file_watch.watch_box(box, 1)
            on_over = watch._boxes[box].on_over
            assert on_over is not None
            await asyncio.to_thread(on_over, "more than its share")

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(watched())
        finally:
            loop.close()
    assert calls == [(box, "more than its share", True)]
