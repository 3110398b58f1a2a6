"""verifiers' `PrimeRuntime` for a subclass that sets its private SDK client (`_client`) to borrow a live sandbox."""

from __future__ import annotations

import inspect

from verifiers.v1.runtimes import PrimeRuntime, PrimeRuntimeInfo

from arena_kit.verifiers_seam.errors import SeamError

__all__ = ["PrimeRuntime", "PrimeRuntimeInfo"]

if "self._client" not in inspect.getsource(PrimeRuntime):
    raise SeamError("verifiers' PrimeRuntime no longer keeps its SDK client in `_client`: sqlite_sandbox's "
                    "BorrowedPrimeRuntime sets it (arena_kit.verifiers_seam.prime); re-read verifiers' runtimes/prime.py")
