"""Mutation sweep of the schema-migration grader: single-edit mutants of each reference migration, graded on held-out rows."""

from schema_migration.mutants.build import mutants
from schema_migration.mutants.equivalent import EQUIVALENT, is_equivalent
from schema_migration.mutants.sweep import family_seeds, sweep

__all__ = ["EQUIVALENT", "family_seeds", "is_equivalent", "mutants", "sweep"]
