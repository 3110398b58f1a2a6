"""The migration families, in the fixed order a task's seed picks from (seed % len(FAMILIES))."""

from schema_migration.families import (
    backfill,
    cents,
    check_repair,
    dedupe,
    foreign_key,
    json_fields,
    lookup,
    merge_columns,
    rename_view,
    split_column,
)
from schema_migration.families.base import Family, Params, World

FAMILIES: tuple[Family, ...] = (
    split_column.FAMILY,
    merge_columns.FAMILY,
    cents.FAMILY,
    lookup.FAMILY,
    backfill.FAMILY,
    dedupe.FAMILY,
    check_repair.FAMILY,
    json_fields.FAMILY,
    rename_view.FAMILY,
    foreign_key.FAMILY,
)
BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}

__all__ = ["BY_NAME", "FAMILIES", "Family", "Params", "World"]
