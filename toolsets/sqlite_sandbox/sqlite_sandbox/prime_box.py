"""Borrows a live Prime sandbox by id through verifiers' own `PrimeRuntime`, never owning it.

verifiers 0.4.0 can attach to an existing docker/podman container (`DockerRuntime.attach`) but not
to an existing Prime sandbox: `PrimeRuntime` gets its client in `start()` (which creates a sandbox)
and deletes the sandbox in `teardown()`/`cleanup()`. `BorrowedPrimeRuntime` is the smallest adapter:
it sets the sandbox id and a client, so `run`/`read`/`write` are verifiers' own, and it turns both
teardown paths into no-ops, so the rollout that created the sandbox stays its only owner. It relies on
two private details (`PrimeRuntime._client`, which `arena_kit.verifiers_seam.prime.bind_client` sets, and
that only teardown/cleanup delete), so it refuses any other verifiers version; `tests/toolsets/sqlite_sandbox/test_boxes.py` pins both details.

The tool server is a host subprocess, and verifiers strips every variable whose name holds
`API_KEY` from those: its Prime credentials can only come from `~/.prime/config.json`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from verifiers.v1.errors import SandboxError
from verifiers.v1.utils.prime import load_prime_config

from arena_kit.verifiers_seam import VERIFIERS_VERSION
from arena_kit.verifiers_seam.prime import PrimeRuntime, PrimeRuntimeInfo, bind_client

__all__ = ["VERIFIERS_VERSION", "BorrowedPrimeRuntime", "borrow", "credentials_problem", "version_problem"]

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
"""One SDK client per event loop (its HTTP pool belongs to the loop), shared by every borrowed sandbox."""


def version_problem() -> str | None:
    """Why the Prime adapter cannot run with the installed verifiers, or None if it can."""
    found = version("verifiers")
    if found == VERIFIERS_VERSION:
        return None
    return (
        f"sqlite_sandbox's Prime adapter supports verifiers=={VERIFIERS_VERSION}, found {found}; "
        "re-check BorrowedPrimeRuntime against the new PrimeRuntime before using it"
    )


def _check_version() -> None:
    if problem := version_problem():
        raise SandboxError(problem)


def credentials_problem() -> str | None:
    """Why the host-side tool server could not authenticate with Prime, or None if it can."""
    if load_prime_config().get("api_key"):
        return None
    return (
        "the sqlite_sandbox tool server runs as a host subprocess, which verifiers starts without any "
        "*API_KEY* variable, so $PRIME_API_KEY never reaches it; run `prime login` (it writes "
        "~/.prime/config.json, which the tool server reads)"
    )


def _new_client() -> Any:
    from prime_sandboxes import AsyncSandboxClient

    return AsyncSandboxClient()


def _client() -> Any:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = _clients[loop] = _new_client()
    return client


class BorrowedPrimeRuntime(PrimeRuntime):  # type: ignore[misc]  # verifiers ships no types
    """verifiers' PrimeRuntime on a sandbox someone else created; it never deletes that sandbox."""

    def __init__(self, info: PrimeRuntimeInfo, client: Callable[[], Any] = _client) -> None:
        _check_version()
        super().__init__(info)  # raises SystemExit without credentials (verifiers' ensure_prime_auth)
        self.info.id = info.id
        self.info.borrowed = True
        bind_client(self, client())

    async def start(self) -> None:
        raise SandboxError("a borrowed Prime sandbox is already running; it is never started here")

    async def teardown(self) -> None:
        """The rollout that created the sandbox deletes it; a borrower only lets go."""

    def cleanup(self) -> None:
        """Never delete a borrowed sandbox, not even from verifiers' atexit backstop."""


def borrow(info: PrimeRuntimeInfo) -> BorrowedPrimeRuntime:
    """A runtime on the live sandbox `info.id`, sharing this loop's SDK client.

    Raises:
        SandboxError: no sandbox id, no Prime credentials, or another verifiers version.
    """
    if not info.id:
        raise SandboxError("the Prime runtime info carries no sandbox id")
    try:
        return BorrowedPrimeRuntime(info)
    except SystemExit as error:  # verifiers exits the process when no key is configured
        raise SandboxError(f"no Prime credentials for the tool server: {error}") from None
