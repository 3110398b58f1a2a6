"""SQLite sandbox toolset: the per-rollout state and config; the server is `sqlite_sandbox.toolset`.

The toolset class is not imported here, so `python -m sqlite_sandbox.toolset` runs it without a
second import of the module. The state names load on first use: `state` imports verifiers, which
the engine (run inside the box) and the grader never need. In the server's launch this init runs
first, and defers verifiers' re-export inits (`arena_kit.lazy_init`).
"""

from typing import TYPE_CHECKING, Any

from arena_kit.verifiers_seam.package_inits import defer_for_server

if TYPE_CHECKING:
    from sqlite_sandbox.state import (
        DEFAULT_CHECKPOINT_DIR,
        DEFAULT_DB_PATH,
        START,
        SandboxConfig,
        SandboxState,
        checkpoint_path,
    )

__all__ = [
    "DEFAULT_CHECKPOINT_DIR",
    "DEFAULT_DB_PATH",
    "START",
    "SandboxConfig",
    "SandboxState",
    "checkpoint_path",
]

defer_for_server(f"{__name__}.toolset")


def __getattr__(name: str) -> Any:
    if name in __all__:
        from sqlite_sandbox import state

        return getattr(state, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
