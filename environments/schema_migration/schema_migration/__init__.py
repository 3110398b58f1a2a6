"""Schema migration (tier 3): migrate a real SQLite database; graded on held-out rows outside the container."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena_kit.envs.lean import LeanEnv
    from schema_migration.taskset import SchemaMigrationTaskset

__all__ = ["LeanEnv", "SchemaMigrationTaskset"]


def __getattr__(name: str) -> Any:
    # The taskset and the env pull in verifiers (~4 s); the model server and the grader import only
    # their own modules of this package, so both load when verifiers asks for them.
    if name == "SchemaMigrationTaskset":
        from schema_migration.taskset import SchemaMigrationTaskset

        return SchemaMigrationTaskset
    if name == "LeanEnv":
        from arena_kit.envs.lean import LeanEnv

        return LeanEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
