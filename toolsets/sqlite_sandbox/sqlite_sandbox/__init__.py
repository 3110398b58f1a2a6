"""SQLite sandbox toolset: the per-rollout state and config; the server is `sqlite_sandbox.toolset`.

The toolset class is not imported here, so `python -m sqlite_sandbox.toolset` runs it without a
second import of the module.
"""

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
