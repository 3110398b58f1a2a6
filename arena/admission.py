"""Admit live harness processes into their boxes a few at a time: a hook on verifiers 0.4.0 only.

verifiers starts the ACP harnesses (claude_code, codex) as live processes in the box
(`ContainerRuntime.open_process`), and gives each a fixed 5 s (30 s on a nested host) to report its
PID, polling with one `docker exec` every 50 ms. At 32 rollouts the starts come in one burst; their
handshakes and polls queue on the engine and some miss the deadline ("container live process failed
to start"), which ends the rollout. No config knob bounds this on docker (`runtimes/limiters.py`
paces only the remote runtimes' sandbox creation, `max_concurrent` bounds whole episodes), so
Arena runs vf-eval through this module, which puts `open_process` behind a semaphore: at most
`limit` handshakes run at once, and the wait for admission is outside the 5 s. On another
verifiers version the hook is not installed (with a warning): its deadline may have moved.

Usage (what `arena.evalrun` launches): `python -m arena.admission LIMIT <vf-eval arguments>`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["DEFAULT_STARTS", "HOOKED_VERSION", "LIVE_HARNESSES", "install", "main"]

HOOKED_VERSION = "0.4.0"
"""The verifiers version whose `ContainerRuntime.open_process` this hook was written against."""
LIVE_HARNESSES = frozenset({"claude_code", "codex", "arena-codex"})
"""Harnesses verifiers starts as a live process in the box (the ones the deadline can hit)."""
DEFAULT_STARTS = 4
"""Handshakes at once by default: c=32 lost 3 of 64 claude_code/codex rollouts without a limit."""

logger = logging.getLogger(__name__)


def install(limit: int) -> bool:
    """Put verifiers' `ContainerRuntime.open_process` behind a semaphore of `limit` (False: not
    installed, on a verifiers version this hook was not written for).

    Raises:
        ValueError: `limit` is below 1.
    """
    if limit < 1:
        raise ValueError(f"the harness-start limit must be at least 1, got {limit}")
    import verifiers
    from verifiers.v1.runtimes.container import ContainerRuntime

    if verifiers.__version__ != HOOKED_VERSION:
        logger.warning("verifiers %s is not %s: harness starts are not limited (check "
                       "ContainerRuntime.open_process's deadline, then arena.admission)", verifiers.__version__, HOOKED_VERSION)
        return False
    original: Callable[..., Awaitable[Any]] = ContainerRuntime.open_process
    gate = asyncio.Semaphore(limit)

    async def admitted(self: Any, argv: list[str], env: dict[str, str]) -> Any:
        async with gate:
            return await original(self, argv, env)

    ContainerRuntime.open_process = admitted
    return True


def main(argv: list[str] | None = None) -> None:
    """`LIMIT <vf-eval arguments>`: install the hook, then run vf-eval in this process."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or not args[0].isdigit():
        raise SystemExit("usage: python -m arena.admission LIMIT <vf-eval arguments>")
    install(int(args[0]))
    from verifiers.v1.cli.eval.main import main as vf_eval

    sys.argv = ["vf-eval", *args[1:]]
    vf_eval(args[1:])


if __name__ == "__main__":
    main()
