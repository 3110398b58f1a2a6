"""verifiers' `PrimeRuntime` for a subclass that borrows a live sandbox: `bind_client` sets its private SDK client (`_client`)."""

from __future__ import annotations

import inspect
from typing import Any

from verifiers.v1.runtimes import PrimeRuntime, PrimeRuntimeInfo

from arena_kit.errors import SeamError

__all__ = ["PrimeRuntime", "PrimeRuntimeInfo", "bind_client"]

if "self._client" not in inspect.getsource(PrimeRuntime):
    raise SeamError(
        "verifiers' PrimeRuntime no longer keeps its SDK client in `_client`: sqlite_sandbox's "
        "BorrowedPrimeRuntime sets it (arena_kit.verifiers_seam.prime); re-read verifiers' runtimes/prime.py"
    )


def bind_client(runtime: PrimeRuntime, client: Any) -> None:
    """Make `runtime` reach its sandbox through `client` (a prime_sandboxes `AsyncSandboxClient`), the SDK
    client every run, read and write of verifiers' `PrimeRuntime` goes through."""
    runtime._client = client
