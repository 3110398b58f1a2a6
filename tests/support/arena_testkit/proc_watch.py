"""Whether a program ran while a block ran: the host's /proc (boxes' processes included) scanned every 20 ms."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _processes() -> Iterator[tuple[bytes, str]]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield (entry / "cmdline").read_bytes(), (entry / "cgroup").read_text()
            except OSError:
                continue


@contextmanager
def processes_matching(needle: bytes) -> Iterator[set[tuple[bytes, str]]]:
    """Yields the set that collects, until the block ends, every process (command line, cgroups) whose command
    line holds `needle`; a box's processes name its container id in their cgroups."""
    seen: set[tuple[bytes, str]] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            seen.update(process for process in _processes() if needle in process[0])

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()
