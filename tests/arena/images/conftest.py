"""A real registry for publish tests: Debian's `docker-registry` (distribution 2.8), started on
loopback on a free port with its own storage and config, stopped and its storage deleted at the end.

Docker allows plain HTTP to 127.0.0.0/8 registries by default, so no daemon change is needed; the
fixture checks that instead of assuming it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REGISTRY_BIN = Path("/usr/bin/docker-registry")
READY_S = 30.0


@dataclass(frozen=True)
class Registry:
    host: str
    """`127.0.0.1:<port>`, what an image ref starts with."""
    storage: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.storage.rglob("*") if p.is_file())


def _need(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _ensure_registry_binary() -> None:
    if REGISTRY_BIN.exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        _need("needs Debian's docker-registry: run `apt-get install docker-registry` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "docker-registry"]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:  # a stale package index is the usual cause
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
        done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0 or not REGISTRY_BIN.exists():
        _need(f"could not install docker-registry with apt-get: {done.stderr.strip()[-400:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loopback_is_insecure_allowed() -> None:
    from arena.engine import docker_client

    cidrs = docker_client().info().get("RegistryConfig", {}).get("InsecureRegistryCIDRs") or []
    if "127.0.0.0/8" not in cidrs:
        _need(f"the Docker engine does not allow plain-HTTP registries on 127.0.0.0/8 (it allows {cidrs})")


@pytest.fixture(scope="session")
def start_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A factory: `start_registry(readonly=False)` → a running Registry; all stopped at session end."""
    _ensure_registry_binary()
    _loopback_is_insecure_allowed()
    started: list[tuple[subprocess.Popen, Registry]] = []

    def start(readonly: bool = False) -> Registry:
        root = tmp_path_factory.mktemp("registry")
        registry = Registry(f"127.0.0.1:{_free_port()}", root / "storage")
        registry.storage.mkdir()
        maintenance = "  maintenance:\n    readonly:\n      enabled: true\n" if readonly else ""
        (root / "config.yml").write_text(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n"
            f"  filesystem:\n    rootdirectory: {registry.storage}\n  delete:\n    enabled: true\n{maintenance}"
            f"http:\n  addr: {registry.host}\n"
        )
        log = (root / "registry.log").open("w")
        process = subprocess.Popen(
            [str(REGISTRY_BIN), "serve", str(root / "config.yml")], stdout=log, stderr=subprocess.STDOUT
        )
        started.append((process, registry))
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(
                    f"docker-registry exited {process.returncode}: {(root / 'registry.log').read_text()[-800:]}"
                )
            try:
                if httpx.get(f"{registry.url}/v2/", timeout=2).status_code == 200:
                    return registry
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        pytest.fail(
            f"docker-registry on {registry.host} did not answer /v2/ within {READY_S:g} s: {(root / 'registry.log').read_text()[-800:]}"
        )

    yield start
    for process, registry in started:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(registry.storage, ignore_errors=True)


@pytest.fixture(scope="session")
def registry(start_registry) -> Registry:
    return start_registry()
