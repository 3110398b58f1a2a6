"""A tool server started with vf-eval: import the server stack, then become the server an order on stdin names.

vf-eval starts a shared tool server (`python -m <toolset module>`) only after its own imports,
config and env are done, and the server's ~1.4 CPU-s of imports then run alone. Started with
vf-eval (`arena.vf_startup.prewarm`), this process spends them while vf-eval imports, on the other
core. It then waits for one JSON line on stdin, `{"module", "cwd", "log", "env"}`, exactly what
verifiers' `SubprocessRuntime.run_background` would have started the server with, and runs the
module as `__main__` in that directory, environment and log, as `python -m` would. Stdin closing
first (vf-eval ended or started no server) ends it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import sys
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["PRELOAD", "Order", "become", "main", "read_order"]

PRELOAD = ("verifiers.v1.mcp.toolset", "verifiers.v1.mcp.server", "mcp.server.mcpserver", "uvicorn", "httpx")
"""What every toolset server imports before it serves (its own modules come after the order)."""


@dataclass(frozen=True)
class Order:
    """The server to become."""

    module: str
    cwd: str
    log: str
    """The server's log file (its stdout and stderr), truncated as verifiers' spawn does."""
    env: dict[str, str]
    """Its whole environment."""

    def line(self) -> str:
        return json.dumps(asdict(self)) + "\n"


def read_order(line: str) -> Order:
    """Parse and check one order line.

    Raises:
        ValueError: the line is not an order (named what is wrong).
    """
    try:
        order: Any = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"a warm start order must be one JSON object: {error}") from None
    if not isinstance(order, dict):
        raise ValueError(f"a warm start order must be a JSON object, got {type(order).__name__}")
    for key, kind in (("module", str), ("cwd", str), ("log", str), ("env", dict)):
        if not isinstance(order.get(key), kind):
            raise ValueError(f"a warm start order needs {key!r} as a {kind.__name__}, got {order.get(key)!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in order["env"].items()):
        raise ValueError("a warm start order's env maps strings to strings")
    if set(order) != {"module", "cwd", "log", "env"}:
        raise ValueError(f"a warm start order has unknown keys {sorted(set(order) - {'module', 'cwd', 'log', 'env'})}")
    return Order(**order)


def become(order: Order) -> None:
    """Run `order`'s module as `python -m` would, in its cwd, environment and log."""
    if sys.path and sys.path[0] == os.getcwd():  # `-m` put the start directory first; the server's is its cwd
        sys.path[0] = order.cwd
    os.chdir(order.cwd)
    log = os.open(order.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.environ.clear()
    os.environ.update(order.env)
    sys.argv = [order.module]
    runpy.run_module(order.module, run_name="__main__", alter_sys=True)


def main() -> None:
    from arena_kit.verifiers_seam.package_inits import defer_verifiers_init

    defer_verifiers_init()
    for name in PRELOAD:
        # Warming is best effort: what fails here fails again, in the server's log, when the server imports it.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    line = sys.stdin.readline()
    if not line.strip():
        return
    become(read_order(line))


if __name__ == "__main__":
    main()
