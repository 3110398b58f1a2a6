"""Shorten vf-eval's launch → first rollout (verifiers 0.4.0): lazy imports, a tool server warmed beside it, a fast port poll.

**Imports.** vf-eval's entry module imports `verifiers.v1`, whose init re-exports the whole stack,
and verifiers resolves a taskset or harness id with `find_spec("verifiers.v1.<kind>.<id>")`, which
runs that package's init and with it every built-in one (nine harnesses with the ACP stack, three
tasksets, the judges). `arena_kit.lazy_init` puts stand-ins for those re-export inits in
`sys.modules` that import a name's defining module when it is first read: what a run never touches
is never imported, and everything it reads is the same object.

**Warm tool server.** verifiers starts a shared tool server (`python -m <toolset>`, a host
process of its subprocess runtime) only once its own imports, config and env are done; the
server's ~1.4 CPU-s of imports then run alone. `prewarm` starts `arena_kit.box.warm_start` with
vf-eval, which imports the server stack on the other core and waits; `hand_over_tool_server` makes
the first such spawn an order to it instead (same argv module, cwd, log and environment as
verifiers' `run_background` computes, API keys dropped as there), and verifiers keeps the process
for teardown as its own. Only a `run_background` whose source is the one read
(`arena_kit.verifiers_seam.launch`) is replaced; any other spawn, or a warm process already used or gone,
spawns as before.

**math_verify.** verifiers' loaders import the judge base, whose scoring module binds
`math_verify.parse` and `verify` at import (`verifiers.v1.utils.score`) and calls them only when a
boxed math answer is scored; math_verify's init pulls in sympy and latex2sympy2 (~0.4 CPU-s).
`MATH_VERIFY_CALLS` makes those two names forwarders that import the stack on the first call
(`arena_kit.lazy_init.defer_calls`); every other name is the real object on first read.

**anthropic.** verifiers' Anthropic dialect subclasses two `anthropic.types` models at import,
and every vf-eval imports it (the interception server registers all dialects); `anthropic`'s init
adds the whole client (resources, Bedrock, Vertex, AWS, Foundry; ~0.3 CPU-s) that a run relaying
no Anthropic call never uses. `DEFERRED_INITS` runs that init on the first read of one of its
names (`arena_kit.lazy_init.defer_init`), and a submodule import does not.

**Port and readiness polls.** verifiers reads back the port a shared tool server binds from a file,
polling once a second (verifiers' launch module), then probes it until it
answers, again sleeping a second after each miss; no rollout starts before both. The
replacements poll every `PORT_POLL_S` with the same 180 s budget and the same errors. Each is
replaced only when its source is the one read (`arena_kit.verifiers_seam.launch`);
otherwise both stay verifiers' own, with a warning.

Measured on the 2-core dev machine, quiet (`runtime_bench/measure/startup.py`, median of 3, fault-localisation,
oracle): launch → first box 5.1 → 2.6 s for bash, arena-bash and claude_code; vf-eval's CPU-s until
its first rollout 3.1 → 2.45. What remains is vf-eval's own imports of what verifiers needs to serve
(anthropic.types, openai, mcp, prime_sandboxes), with the warm server done beside them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from arena_kit.verifiers_seam import VERIFIERS_VERSION, pinned
from arena_kit.box.warm_start import Order

__all__ = [
    "DEFERRED_INITS",
    "MATH_VERIFY_CALLS",
    "PORT_POLL_S",
    "PORT_WAIT_S",
    "PROBE",
    "WarmServer",
    "fast_server_polls",
    "hand_over_tool_server",
    "lighten_imports",
    "prewarm",
    "read_back_port",
]
MATH_VERIFY_CALLS = ("math_verify", ("parse", "verify"))
"""The package whose init is deferred in vf-eval and the names a module binds at import and calls later."""
DEFERRED_INITS = ("anthropic",)
"""Packages whose own init (not their submodules) runs on the first read of one of its names."""
PORT_POLL_S = 0.02
"""Between two reads of a starting tool server's port file (a read is one small file on the host)."""
PORT_WAIT_S = 180.0
"""How long verifiers waits for the port (180 polls of 1 s), kept."""
PROBE = f"""
import sys, time, urllib.error, urllib.request
deadline = time.monotonic() + {PORT_WAIT_S}
while True:
    try:
        urllib.request.urlopen(sys.argv[1], timeout=2); sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        if time.monotonic() > deadline:
            sys.exit(1)
        time.sleep({PORT_POLL_S})
"""
"""verifiers' readiness probe (any HTTP answer, MCP's 406 to a bare GET included, proves the server
listens; stdlib only, since it runs in the server's runtime), retrying every PORT_POLL_S within the
same 180 s. A server reports its port before its setup and listens only after it, so the first
try usually finds nothing listening: verifiers' own probe then sleeps a whole second."""
logger = logging.getLogger(__name__)


def lighten_imports() -> bool:
    """Defer verifiers' re-export package inits and math_verify's stack in this process (False: the
    inits were not deferred, see `defer_verifiers_init`).

    Must run before anything imports `verifiers.v1`."""
    from arena_kit.lazy_init import defer_calls, defer_init
    from arena_kit.verifiers_seam.package_inits import defer_verifiers_init

    deferred = defer_verifiers_init()
    defer_calls(*MATH_VERIFY_CALLS)
    for package in DEFERRED_INITS:
        defer_init(package)
    return deferred


async def read_back_port(runtime: Any, path: str) -> int:
    """verifiers' port read-back (`arena_kit.verifiers_seam.launch`), polling every PORT_POLL_S instead of every second."""
    from verifiers.v1.errors import ToolsetError

    deadline = time.monotonic() + PORT_WAIT_S
    while True:
        with contextlib.suppress(Exception):
            data = (await runtime.read(path)).decode().strip()
            if data.isdigit():
                return int(data)
        if time.monotonic() >= deadline:
            raise ToolsetError(f"server did not report its port at {path} in its runtime")
        await asyncio.sleep(PORT_POLL_S)


def fast_server_polls() -> bool:
    """Replace verifiers' tool server port read-back with `read_back_port` and its readiness probe with
    `PROBE` (False: neither replaced, on another verifiers version or when either is not the code read)."""
    if not pinned():
        logger.warning(
            "verifiers is not %s: the tool server port and readiness polls stay at 1 s (check "
            "arena_kit.verifiers_seam.launch)",
            VERIFIERS_VERSION,
        )
        return False
    from arena_kit.verifiers_seam.launch import replace_port_polls

    if not replace_port_polls(read_back_port, PROBE):
        logger.warning(
            "verifiers.v1.mcp.launch's port poll or probe is not the code arena_kit.verifiers_seam.launch "
            "replaces: the tool server polls stay at 1 s"
        )
        return False
    return True


def _server_env(base: dict[str, str]) -> dict[str, str]:
    """What verifiers' subprocess runtime passes a host process from `base`: no `*API_KEY*` variable."""
    return {k: v for k, v in base.items() if "API_KEY" not in k.upper()}


class WarmServer:
    """A started `arena_kit.box.warm_start` process, waiting for its one order."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.used = False

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    async def wait(self) -> int:
        """Wait for the server to exit (verifiers' teardown awaits this after its SIGTERM)."""
        while (code := self.process.poll()) is None:
            await asyncio.sleep(PORT_POLL_S)
        return code

    def release(self) -> None:
        """End the process if it never got its order (it reads end of input and exits)."""
        if not self.used and self.process.stdin is not None:
            self.used = True
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def order(self, order: Order) -> bool:
        """Send the one order (False: already used, or the process is gone)."""
        if self.used or self.process.poll() is not None or self.process.stdin is None:
            return False
        self.used = True
        try:
            self.process.stdin.write(order.line().encode())
            self.process.stdin.close()
        except OSError:
            return False
        return True


def prewarm() -> WarmServer:
    """Start a warm tool server process (it ends by itself when this process closes its stdin or exits)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "arena_kit.box.warm_start"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_server_env(dict(os.environ)),
        start_new_session=True,
    )  # its own group, as verifiers' servers: teardown signals the group
    warm = WarmServer(process)
    atexit.register(warm.release)
    return warm


def hand_over_tool_server(warm: WarmServer) -> bool:
    """Make verifiers' first host-side `python -m <module>` spawn an order to `warm` (False: not patched,
    on another verifiers version or when `run_background` is not the one read)."""
    if not pinned():
        warm.release()
        return False
    from arena_kit.verifiers_seam.launch import route_module_spawns

    def spawn(module: str, workdir: Path, env: dict[str, str], log: str) -> WarmServer | None:
        order = Order(
            module=module, cwd=str(workdir), log=str(workdir / log), env={**_server_env(dict(os.environ)), **env}
        )
        return warm if warm.order(order) else None

    if not route_module_spawns(spawn):
        logger.warning(
            "SubprocessRuntime.run_background is not the method arena_kit.verifiers_seam.launch replaces: "
            "tool servers start after vf-eval's imports"
        )
        warm.release()
        return False
    return True
