"""verifiers' re-export package inits, stood in for by lazy modules in a tool server or vf-eval (`arena_kit.lazy_init`)."""

from __future__ import annotations

import logging

from arena_kit.lazy_init import defer_reexports, launched_as
from arena_kit.verifiers_seam import VERIFIERS_VERSION

__all__ = ["DEFERRED", "defer_for_server", "defer_verifiers_init"]

DEFERRED = (
    "verifiers.v1",
    "verifiers.v1.mcp",
    "verifiers.v1.tasksets",
    "verifiers.v1.harnesses",
    "verifiers.v1.judges",
)
"""The package inits a process skips (parents first). verifiers resolves a taskset or harness id by
`find_spec("verifiers.v1.<kind>.<id>")`, which runs the package init and with it every built-in one
(the harbor, nemo_gym and openenv tasksets; all nine harnesses with the ACP stack). On
`VERIFIERS_VERSION` they hold re-exports, `__all__` and v1's NullHandler only."""

logger = logging.getLogger(__name__)


def defer_verifiers_init() -> bool:
    """Put lazy stand-ins for DEFERRED in `sys.modules` (False, and nothing changed: one is already
    imported, verifiers is another version, or an init is more than re-exports)."""
    import sys

    if any(name in sys.modules for name in DEFERRED):
        return False
    from importlib.metadata import version

    found = version("verifiers")
    if found != VERIFIERS_VERSION:
        logger.warning(
            "verifiers %s is not %s: the process imports verifiers in full (check "
            "arena_kit.verifiers_seam.package_inits against its package inits)",
            found,
            VERIFIERS_VERSION,
        )
        return False
    return defer_reexports(DEFERRED)


def defer_for_server(module: str) -> bool:
    """In a process launched as `python -m <module>` (a tool server), defer verifiers' package inits."""
    return launched_as(module) and defer_verifiers_init()
