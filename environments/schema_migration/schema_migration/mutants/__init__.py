"""Mutation sweep of the schema-migration grader: single-edit mutants of each reference migration, graded on held-out rows."""

from schema_migration.mutants.build import Mutant, mutants
from schema_migration.mutants.equivalent import EQUIVALENT, is_equivalent
from schema_migration.mutants.sweep import Outcome, family_seeds, sweep

__all__ = ["EQUIVALENT", "Mutant", "Outcome", "family_seeds", "is_equivalent", "mutants", "sweep"]
