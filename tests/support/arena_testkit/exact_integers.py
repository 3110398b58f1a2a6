"""Asserts a schema-migration task grades exact integer conversions 1.0 and conversions through REAL at most the miss cap."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from schema_migration.generate import Spec
from schema_migration.grade import grade
from schema_migration.score import MISS_CAP


def assert_exact_pass_and_through_real_fail(s: Spec, exact: Iterable[str], through_real: Mapping[str, str]) -> None:
    """Each `exact` migration scores 1.0; each of `through_real` (how -> SQL) at most MISS_CAP, with wrong rows."""
    for sql in exact:
        result = grade(sql, s)
        assert result.score == 1.0, result.reason
    for how, sql in through_real.items():
        result = grade(sql, s)
        assert result.score <= MISS_CAP, (how, result.reason)
        assert result.row_stats is not None and result.row_stats.wrong > 0, (how, result.reason)
