"""Grades a migration: runs it on a fresh held-out database in a confined child process, then scores it.

This is the grader's I/O edge: it makes a scratch directory, starts the child (`jail`) on the
migration, writes the reference rows there (`reference`) for the child to compare with while it works, and hands
the child's report to the pure scoring (`score`). Nothing here runs agent SQL in this process.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from schema_migration import dbfile, jail
from schema_migration.families import BY_NAME
from schema_migration.generate import Spec, expected_rows, heldout_rows, untouched
from schema_migration.reference import write_expected
from schema_migration.score import Grade, score
from schema_migration.schema import Row

__all__ = ["Grade", "grade"]


def grade(
    sql: str,
    spec: Spec,
    rows: Mapping[str, list[Row]] | None = None,
    limits: jail.Limits = jail.Limits(),
) -> Grade:
    """Grade `sql` on `rows` (default: the spec's held-out rows)."""
    rows = rows if rows is not None else heldout_rows(spec)
    probes = BY_NAME[spec.family].probes(spec.params)
    kept = untouched(spec)
    names = [o.name for group in (kept.tables, kept.indexes, kept.views, kept.triggers) for o in group]
    wanted = jail.Wanted(tuple(t.name for t in spec.target.tables), tuple(v.name for v in spec.target.views), tuple(names))
    with tempfile.TemporaryDirectory(prefix="schema-migration-grade-") as scratch:
        db = Path(scratch) / "heldout.sqlite"
        running = jail.start(db, sql, [p.sql for p in probes], limits, dbfile.plan(spec.source, rows), wanted)
        try:
            if not running.refused:
                # While the child builds and migrates: the reference rows, for it to compare with.
                plan = write_expected(Path(scratch) / "expected.sqlite", spec.target, expected_rows(spec, dict(rows)))
                running.compare(plan)
        except BaseException:
            running.kill()
            raise
        report = running.result()
    return score(report, spec.target, probes, rows, kept)
