"""Schema migration (tier 3): migrate a real SQLite database; graded on held-out rows outside the container."""

from schema_migration.taskset import SchemaMigrationTaskset

__all__ = ["SchemaMigrationTaskset"]
