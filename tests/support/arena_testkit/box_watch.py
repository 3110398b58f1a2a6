"""Host-side reads of a live box for the escape battery: its engine record, its cgroup files as the host sees them,
its writable layer's size on the host disk, and HTTP listeners on the host that record what reached them."""

from __future__ import annotations

import contextlib
import http.server
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from arena_testkit.rollouts import docker_gateway

__all__ = [
    "cpu_usage_ns",
    "docker",
    "docker_inspect",
    "host_cgroup",
    "host_get",
    "in_thread",
    "listeners",
    "size_kib",
    "size_rw",
    "throttled",
]


def docker(*args: str, timeout: float = 30, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The docker CLI, text in and out, under a hard timeout."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, input=stdin)


def docker_inspect(container: str) -> dict[str, Any]:
    """The engine's record of a container (`docker inspect`)."""
    done = docker("inspect", "--format", "{{json .}}", container)
    assert done.returncode == 0, done.stderr
    inspected: dict[str, Any] = json.loads(done.stdout)
    return inspected


def size_rw(container: str) -> int:
    """Bytes the container's writable layer holds on the host's disk."""
    return int(docker("inspect", "--size", "--format", "{{.SizeRw}}", container, timeout=60).stdout.strip() or 0)


def size_kib(options: list[str]) -> int:
    """A tmpfs `size=` option in KiB (0: none)."""
    for option in options:
        if option.startswith("size="):
            value = option.removeprefix("size=")
            units = {"k": 1, "m": 1024, "g": 1024**2}
            return int(value[:-1]) * units[value[-1].lower()] if value[-1].isalpha() else int(value) // 1024
    return 0


def host_cgroup(container: str, controller: str, name: str) -> Path:
    """The container's cgroup file as the host sees it (v1 cgroupfs or systemd driver, or v2)."""
    full = docker_inspect(container)["Id"]
    for candidate in (
        f"/sys/fs/cgroup/{controller}/docker/{full}/{name}",
        f"/sys/fs/cgroup/{controller}/system.slice/docker-{full}.scope/{name}",
        f"/sys/fs/cgroup/system.slice/docker-{full}.scope/{name}",
        f"/sys/fs/cgroup/docker/{full}/{name}",
    ):
        if Path(candidate).exists():
            return Path(candidate)
    raise AssertionError(f"no {controller}/{name} for container {container} under /sys/fs/cgroup")


def cpu_usage_ns(container: str) -> Callable[[], int]:
    with contextlib.suppress(AssertionError):
        path = host_cgroup(container, "cpuacct", "cpuacct.usage")
        return lambda: int(path.read_text())
    stat = host_cgroup(container, "cpu", "cpu.stat")
    return lambda: int(dict(line.split() for line in stat.read_text().splitlines())["usage_usec"]) * 1000


def throttled(container: str) -> Callable[[], int]:
    stat = host_cgroup(container, "cpu", "cpu.stat")
    return lambda: int(dict(line.split() for line in stat.read_text().splitlines())["nr_throttled"])


@contextlib.contextmanager
def in_thread(work: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Run `work` in a thread; the dict gets its "value" (or "error") when it ends, and the block waits for it."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as error:  # noqa: BLE001 - handed to the caller below
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield result
    finally:
        thread.join(120)
    if "error" in result:
        raise result["error"]


def host_get(url: str) -> int:
    done = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-m", "5", "-w", "%{http_code}", url],
        capture_output=True,
        text=True,
        timeout=15,
    )
    return int(done.stdout or 0)


@contextlib.contextmanager
def listeners() -> Iterator[list[tuple[str, list[str]]]]:
    """HTTP listeners the test runs on the host (the docker bridge gateway and loopback), each with the paths it served."""
    handles, out = [], []
    for address in (docker_gateway(), "127.0.0.1"):
        served: list[str] = []

        class Recording(http.server.BaseHTTPRequestHandler):
            seen = served

            def do_GET(self) -> None:
                self.seen.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer((address, 0), Recording)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        handles.append(server)
        out.append((f"http://{address}:{server.server_address[1]}/arena-escape", served))
    try:
        yield out
    finally:
        for server in handles:
            server.shutdown()
            server.server_close()
