"""A read of a box's file by an exec, bounded in bytes and time: what the lean runtime falls back to when the
host cannot read the file itself (`lean_docker.box_files`), and every read of a stock box (`verifiers_seam.container_hooks`).

The exec runs `timeout -s KILL READ_S head -c N -- path` (or `cat` cut so, `WHOLE`) as the reading view's user: at most `READ_CAP`
bytes (or the caller's `max_bytes`) leave the box, whatever the file is (`/dev/zero`, a sparse terabyte),
and the box kills a read still waiting after `READ_S` (a FIFO nobody writes, a file under a lease, whose
break waits 45 s). The host runs the exec off its event loop and stops waiting 10 s after that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from verifiers.v1.errors import SandboxError

__all__ = ["READ_CAP", "READ_S", "WHOLE", "read_by_exec"]

READ_CAP = 256 << 20
"""The most bytes any read of a box's file brings into this process (a caller's `max_bytes` may lower it)."""
WHOLE = 'exec 3>&1; s=$( { { cat -- "$1"; echo $? >&4; } | head -c "$2" >&3; } 4>&1 ); exit "$s"'
"""`cat` of `$1` cut after `$2` bytes, exiting with cat's status (POSIX sh has no pipefail)."""
READ_S = 30.0
"""Seconds a read of a box's file may take (under the kernel's 45 s lease-break time: a leased file fails)."""


async def read_by_exec(
    run: Callable[[list[str]], Awaitable[tuple[int, bytes, bytes]]], path: str, max_bytes: int | None
) -> tuple[int, bytes, bytes]:
    """`run` (one exec of an argv) reading `path`: its exit code, output and errors, the exit code the
    reader's (`head`'s) when it finished in time.

    Raises:
        SandboxError: the read took longer than `READ_S`, or (without `max_bytes`) the file holds more than `READ_CAP`.
    """
    # Unbounded by the caller: `cat` (its words on a failure are the stock runtime's) cut by `head`, with cat's
    # status (141, SIGPIPE, once `head` has its bytes); bounded: `head -c`, as the stock runtime reads it.
    reader = (
        ["sh", "-c", WHOLE, "sh", path, str(READ_CAP + 1)]
        if max_bytes is None
        else ["head", "-c", str(max_bytes), "--", path]
    )
    argv = ["timeout", "-s", "KILL", f"{READ_S:g}", *reader]
    try:
        code, out, err = await asyncio.wait_for(run(argv), READ_S + 10)
    except TimeoutError:
        raise SandboxError(f"in the running box: read {path!r}: no answer within {READ_S:g} s") from None
    if code == 137:
        raise SandboxError(
            f"in the running box: read {path!r}: not read within {READ_S:g} s (a FIFO or a locked file?)"
        )
    if code in (0, 141) and max_bytes is None and len(out) > READ_CAP:
        raise SandboxError(f"in the running box: read {path!r}: over the {READ_CAP} byte limit of a box read")
    return code, out, err
