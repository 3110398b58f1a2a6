"""Runs the engine inside the agent's container through the Docker SDK: the one place Docker is called.

A dead sandbox raises `SandboxUnavailable` instead of returning output, so the agent never reads an
infrastructure failure as a query result. Its message is safe to show the agent; Docker's own
diagnostics are logged on the host only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from functools import cache
from pathlib import Path
from typing import Any, cast

import docker
import docker.errors

from sqlite_sandbox import engine

logger = logging.getLogger(__name__)

HOST_GRACE_S = 15.0
"""Extra seconds the host waits beyond the in-container `timeout` before giving up."""


class SandboxUnavailable(Exception):
    """The container (or its python3/sqlite3) cannot run the request; the message is agent-safe."""


@cache
def engine_source() -> str:
    return Path(engine.__file__).read_text()


@cache
def _client() -> docker.DockerClient:
    return docker.from_env()


def _run(container_id: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    try:
        container = _client().containers.get(container_id)
    except docker.errors.NotFound:
        raise SandboxUnavailable(
            "the sandbox container is gone (it was removed or never started); "
            "the database cannot be reached. You can still submit_migration."
        ) from None
    except docker.errors.DockerException as error:
        logger.warning("docker lookup of %s failed: %s", container_id, error)
        raise SandboxUnavailable("the sandbox cannot be reached right now; try again shortly") from None
    if container.status != "running":
        raise SandboxUnavailable(
            f"the sandbox container is not running (status: {container.status}); "
            "the database cannot be reached. You can still submit_migration."
        )
    argv = [
        "timeout", "-k", "2", f"{timeout_s:g}",
        "python3", "-I", "-c", engine_source(), json.dumps(request, ensure_ascii=False),
    ]  # fmt: skip
    try:
        code, output = container.exec_run(argv, demux=True)
    except docker.errors.APIError as error:
        logger.warning("docker exec in %s failed: %s", container_id, error)
        raise SandboxUnavailable(
            "the sandbox container stopped responding; the database cannot be reached. "
            "You can still submit_migration."
        ) from None
    # types-docker types `output` for demux=False; demux=True gives (stdout, stderr), each possibly None.
    out, err = cast("tuple[bytes | None, bytes | None]", output)
    if code in (124, 137):
        raise SandboxUnavailable(
            f"the call ran longer than {timeout_s:g} s inside the container and was killed; "
            "the database was left as it was before the call"
        )
    if code == 127:
        raise SandboxUnavailable("the sandbox image lacks python3; the database tools cannot run")
    try:
        reply = json.loads(out or b"")
    except json.JSONDecodeError:
        logger.warning("engine in %s exited %s: %s", container_id, code, (err or b"")[-2000:])
        raise SandboxUnavailable(f"the sandbox helper failed (exit {code}); try again") from None
    if not isinstance(reply, dict):
        raise SandboxUnavailable("the sandbox helper gave no usable answer; try again")
    return reply


async def run_engine(container_id: str, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run one engine request in the container; raises SandboxUnavailable on any Docker failure."""
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(_run, container_id, request, timeout_s), timeout_s + HOST_GRACE_S
        )
    except TimeoutError:
        raise SandboxUnavailable(
            f"the sandbox did not answer within {timeout_s + HOST_GRACE_S:g} s; try again"
        ) from None
