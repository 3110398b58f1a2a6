"""Runs one engine request inside the rollout's box through verifiers' `Runtime.run`, on any runtime.

The engine travels as `python3 -I -c <source> <request>` under an in-box `timeout -k`, and the host
waits `HOST_GRACE_S` longer than that. A dead sandbox raises `SandboxUnavailable` instead of
returning output, so the agent never reads an infrastructure failure as a query result: its message
is safe to show the agent, and the runtime's own diagnostics are logged on the host only. A request
too big to pass as an argument goes in as a file next to the checkpoints (never under /tmp, which
Prime VMs mount as a small tmpfs).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import verifiers.v1 as vf

from sqlite_sandbox import engine
from sqlite_sandbox.boxes import Boxes

__all__ = ["HOST_GRACE_S", "INLINE_REQUEST_BYTES", "SandboxUnavailable", "engine_argv", "run_engine"]

logger = logging.getLogger(__name__)

HOST_GRACE_S = 15.0
"""Extra seconds the host waits beyond the in-box `timeout` before giving up."""
INLINE_REQUEST_BYTES = 4096
"""Largest request passed inline. Linux caps one argument at 128 KiB, and Prime nests the command
in two shell quotings that turn each `'` (common in SQL) into 25 bytes."""

GONE = (
    "the sandbox is gone (it was removed or never started); the database cannot be reached. "
    "You can still submit_migration."
)
NOT_RUNNING = (
    "the sandbox is not running (it stopped or was removed); the database cannot be reached. "
    "You can still submit_migration."
)
UNREACHABLE = "the sandbox cannot be reached right now; try again shortly"


class SandboxUnavailable(Exception):
    """The box (or its python3/sqlite3) cannot run the request; the message is agent-safe.

    `ran`: the request reached the box and ran there (it timed out, or what answered was not the
    engine). The box is the agent's, so it can shape every answer after that point: such a call
    costs what a completed one does."""

    def __init__(self, message: str, ran: bool = False) -> None:
        super().__init__(message)
        self.ran = ran


@cache
def engine_source() -> str:
    return Path(engine.__file__).read_text()


def engine_argv(request: str, timeout_s: float) -> list[str]:
    """The in-box command for one request (inline JSON, or `@path` of a request file)."""
    return ["timeout", "-k", "2", f"{timeout_s:g}", "python3", "-I", "-S", "-c", engine_source(), request]


async def _dead(boxes: Boxes, info: Any, runtime: vf.Runtime) -> bool:
    """Whether the box itself is gone, as opposed to the command failing in it."""
    if await runtime.alive():
        return False
    await boxes.drop(info)
    return True


async def _run(
    boxes: Boxes, info: Any, request: dict[str, Any], spool_dir: str, timeout_s: float, user: str | None
) -> dict[str, Any]:
    where = f"{info.type} box {info.id}"
    try:
        runtime = await boxes.runtime(info)
        if user is not None:
            runtime = runtime.with_user(user)
    except Exception as error:  # any failure to attach means the tools cannot reach this box
        logger.warning("attaching to %s failed: %s", where, error)
        raise SandboxUnavailable(GONE) from None
    payload = json.dumps(request, ensure_ascii=False)
    try:
        if len(payload.encode()) > INLINE_REQUEST_BYTES:
            path = f"{spool_dir.rstrip('/')}/request-{uuid.uuid4().hex}.json"
            await runtime.write(path, payload.encode())
            payload = f"@{path}"
        result = await runtime.run(engine_argv(payload, timeout_s), {})
    except Exception as error:  # SandboxError, or the engine CLI/API itself failing
        logger.warning("running the engine in %s failed: %s", where, error)
        raise SandboxUnavailable(NOT_RUNNING if await _dead(boxes, info, runtime) else UNREACHABLE) from None
    code = result.exit_code
    if code in (124, 137):  # 137: `timeout -k` escalated, or the box itself was killed
        if code == 137 and await _dead(boxes, info, runtime):
            raise SandboxUnavailable(NOT_RUNNING)
        raise SandboxUnavailable(
            f"the call ran longer than {timeout_s:g} s inside the sandbox and was killed; "
            "the database was left as it was before the call",
            ran=True,
        )
    if code == 127:
        raise SandboxUnavailable("the sandbox image lacks python3; the database tools cannot run", ran=True)
    try:
        reply = json.loads(result.stdout)
    except json.JSONDecodeError:
        logger.warning("engine in %s exited %s: %s", where, code, result.stderr[-2000:])
        if await _dead(boxes, info, runtime):
            raise SandboxUnavailable(NOT_RUNNING) from None
        raise SandboxUnavailable(f"the sandbox helper failed (exit {code}); try again", ran=True) from None
    if not isinstance(reply, dict):
        raise SandboxUnavailable("the sandbox helper gave no usable answer; try again", ran=True)
    return reply


async def run_engine(
    boxes: Boxes, info: Any, request: dict[str, Any], spool_dir: str, timeout_s: float, user: str | None = None
) -> dict[str, Any]:
    """Run one engine request in box `info` (a `BoxInfo`), as the box's `user` (None: its default);
    large requests are spooled in `spool_dir`.

    Raises:
        SandboxUnavailable: the box is gone, stopped, unreachable or lacks python3, or the call
            ran out of time; the message is agent-safe.
    """
    try:
        return await asyncio.wait_for(_run(boxes, info, request, spool_dir, timeout_s, user), timeout_s + HOST_GRACE_S)
    except TimeoutError:
        # The request was sent; an engine that never answers is one the box can fake (a shadowed `timeout`).
        raise SandboxUnavailable(
            f"the sandbox did not answer within {timeout_s + HOST_GRACE_S:g} s; try again", ran=True
        ) from None
