"""Watch one run's containers while it runs: lifetimes from Docker events, CPU and memory from cgroups.

Containers are selected by the label `verifiers.run=<run>` (verifiers puts it on the rollout's
container and on its helper containers; the floor puts it on its own). Their cgroup counters are
read every `interval` seconds while they live, so a container's CPU is its last sample before it
was destroyed: a helper that lives less than one interval is under-counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from arena.engine import RUN_LABEL, container_events

__all__ = ["ContainerProbe", "ContainerStats", "cgroup_files"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
LIFECYCLE = ["create", "start", "die", "destroy"]
SETTLE_S = 10.0
"""How long `stop` waits for the destroy events of containers it saw created."""


@dataclass
class ContainerStats:
    id: str
    created: float | None = None
    started: float | None = None
    destroyed: float | None = None
    cpu_s: float | None = None
    """CPU-seconds used (last sample)."""
    peak_bytes: int | None = None
    """Peak memory (the cgroup's own high-water mark when it keeps one, else the largest sample)."""


def cgroup_files(container_id: str, root: Path = CGROUP_ROOT) -> tuple[Path | None, Path | None, str]:
    """(cpu file, peak-memory file, format) of a container's cgroup, for cgroup v1 (cgroupfs
    driver) or v2 (cgroupfs or systemd driver); Nones when none exists. Format `v1` means
    `cpuacct.usage` in ns and `memory.max_usage_in_bytes`; `v2` means `cpu.stat` usage_usec and
    `memory.peak` (absent before kernel 5.19: then `memory.current`)."""
    v1_cpu = root / "cpuacct" / "docker" / container_id / "cpuacct.usage"
    if v1_cpu.exists():
        return v1_cpu, root / "memory" / "docker" / container_id / "memory.max_usage_in_bytes", "v1"
    for base in (root / "system.slice" / f"docker-{container_id}.scope", root / "docker" / container_id):
        if (base / "cpu.stat").exists():
            peak = base / "memory.peak"
            return base / "cpu.stat", peak if peak.exists() else base / "memory.current", "v2"
    return None, None, ""


def _read_cpu(path: Path, kind: str) -> float | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    if kind == "v1":
        return int(text.strip()) / 1e9
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value) / 1e6
    return None


def _read_int(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass
class ContainerProbe:
    """Start before the run, stop after it; `containers` then holds every container of `run`."""

    run: str
    interval: float = 0.1
    containers: dict[str, ContainerStats] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._client: docker.DockerClient | None = None
        self._stream: Iterator[dict[str, Any]] | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> ContainerProbe:
        filters = {"type": "container", "event": LIFECYCLE, "label": [f"{RUN_LABEL}={self.run}"]}
        # The request is made here, so no event after this line is missed.
        self._stream, self._client = container_events(filters, since=int(time.time()) - 1)
        self._threads = [
            threading.Thread(target=self._watch_events, name=f"probe-events-{self.run}", daemon=True),
            threading.Thread(target=self._sample, name=f"probe-cgroups-{self.run}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> dict[str, ContainerStats]:
        """Wait (bounded) for destroy events of the containers seen, then stop watching."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            with self._lock:
                pending = [c for c in self.containers.values() if c.destroyed is None]
            if not pending:
                break
            time.sleep(0.05)
        self._done.set()
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()
        for thread in self._threads:
            thread.join(5)
        if self._client is not None:
            self._client.close()
        return self.containers

    def _watch_events(self) -> None:
        assert self._stream is not None
        for event in self._stream:
            status = event.get("status") or event.get("Action")
            cid = event.get("id") or (event.get("Actor") or {}).get("ID")
            if not cid or status not in LIFECYCLE:
                continue
            at = event.get("timeNano", 0) / 1e9 or event.get("time", time.time())
            with self._lock:
                stats = self.containers.setdefault(cid, ContainerStats(id=cid))
                if status == "create":
                    stats.created = at
                elif status == "start":
                    stats.started = at
                elif status == "destroy":
                    stats.destroyed = at
            if status == "die":
                self._read(cid)  # a last look, in case the cgroup is still there

    def _sample(self) -> None:
        while not self._done.wait(self.interval):
            with self._lock:
                live = [c.id for c in self.containers.values() if c.started and not c.destroyed]
            for cid in live:
                self._read(cid)

    def _read(self, cid: str) -> None:
        cpu_file, mem_file, kind = cgroup_files(cid)
        if cpu_file is None:
            return
        cpu = _read_cpu(cpu_file, kind)
        peak = _read_int(mem_file)
        with self._lock:
            stats = self.containers[cid]
            if cpu is not None:
                stats.cpu_s = max(cpu, stats.cpu_s or 0.0)
            if peak is not None:
                stats.peak_bytes = max(peak, stats.peak_bytes or 0)
