"""Tallies sweep outcomes per family and operator: the kit's adequacy tallies (`arena_kit.adversaries.mutation.adequacy`)."""

from arena_kit.adversaries.mutation.adequacy import Tally, table, tally

__all__ = ["Tally", "table", "tally"]
