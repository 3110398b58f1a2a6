"""Run-time replacements in verifiers' tool server launch: the port and readiness polls, and the first host spawn.

Each replaces verifiers' code only when that code is the code read (`*_SHA256`, sha256 of its source on
`VERIFIERS_VERSION`); the why is in `arena.vf_startup`, the upstream knob in `docs/upstream/`.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = [
    "PROBE_SHA256",
    "READ_BACK_PORT_SHA256",
    "RUN_BACKGROUND_SHA256",
    "Spawn",
    "digest",
    "replace_port_polls",
    "route_module_spawns",
    "source_digest",
]

READ_BACK_PORT_SHA256 = "d94c2209ccc3a9621cbfac8fbf4d80f4a60e663178abc61405e7216aeb6b3d34"
"""sha256 of `inspect.getsource(verifiers.v1.mcp.launch._read_back_port)` on 0.4.0."""
PROBE_SHA256 = "7d7e6d4832925384ba2bc42e9ed94a30363b5c6ea9f464af6bdd21b24306d147"
"""sha256 of `verifiers.v1.mcp.launch._PROBE` on 0.4.0 (180 tries, 1 s apart)."""
RUN_BACKGROUND_SHA256 = "5226d2792ce8474e306c682251ee05712097bc1cc49ab763c2e38402848d5da4"
"""sha256 of `inspect.getsource(verifiers.v1.runtimes.subprocess.SubprocessRuntime.run_background)` on 0.4.0."""

Spawn = Callable[[str, Path, dict[str, str], str], Any]
"""`(module, workdir, process env, log name)` → a started process to keep (verifiers stops and awaits it
at teardown), or None to spawn as verifiers does."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def source_digest(function: Any) -> str:
    return digest(inspect.getsource(function))


def replace_port_polls(read_back_port: Callable[[Any, str], Awaitable[int]], probe: str) -> bool:
    """Make `verifiers.v1.mcp.launch` read back a server's port with `read_back_port` and probe it with
    `probe` (False: neither replaced, when either is not the code read)."""
    from verifiers.v1.mcp import launch

    if launch._read_back_port is read_back_port and launch._PROBE == probe:
        return True
    if source_digest(launch._read_back_port) != READ_BACK_PORT_SHA256 or digest(launch._PROBE) != PROBE_SHA256:
        return False
    launch._read_back_port = read_back_port
    launch._PROBE = probe
    return True


def route_module_spawns(spawn: Spawn) -> bool:
    """Offer each host-side `python -m <module>` spawn of verifiers' subprocess runtime to `spawn` first
    (False: not patched, when `run_background` is not the method read)."""
    from verifiers.v1.runtimes.subprocess import SubprocessRuntime

    original = SubprocessRuntime.run_background
    if source_digest(original) != RUN_BACKGROUND_SHA256:
        return False

    async def run_background(self: Any, argv: list[str], env: dict[str, str], log: str) -> None:
        if len(argv) == 3 and argv[:2] == [sys.executable, "-m"] and self.workdir is not None:
            process = spawn(argv[2], self.workdir, self.process_env(env), log)
            if process is not None:
                self._background.append(process)  # stopped and awaited by verifiers' teardown as its own
                return
        await original(self, argv, env, log)

    SubprocessRuntime.run_background = run_background
    return True
