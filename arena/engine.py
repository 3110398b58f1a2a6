"""Connect to the Docker engine, or explain exactly how to get one."""

from __future__ import annotations

import functools

import docker
from docker.errors import DockerException

from arena.errors import PrerequisiteError

__all__ = ["ENGINE_HINT", "docker_client", "engine_problem"]

ENGINE_HINT = (
    "start one with `images/ensure-docker.sh` (as root on Debian it installs docker.io and starts "
    "dockerd), or start Docker yourself; deselect container tests with -m 'not docker'"
)


def engine_problem() -> str | None:
    """None when an engine answers, else a one-line reason."""
    try:
        client = docker.from_env(version="auto", timeout=10)
        client.ping()
        client.close()
    except DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "Permission denied" in reason:
            return f"Docker daemon not reachable (permission denied): add your user to the `docker` group ({reason})"
        return f"Docker daemon not reachable: {reason}"
    return None


@functools.cache
def docker_client() -> docker.DockerClient:
    """A shared client (API version negotiated with the daemon); raises PrerequisiteError."""
    problem = engine_problem()
    if problem:
        raise PrerequisiteError(f"{problem}. Fix: {ENGINE_HINT}")
    return docker.from_env(version="auto", timeout=600)
