"""The grader: a pure function of (migration SQL, task spec, held-out rows) giving a score and a reason.

A confined child process (`jail`) builds the held-out database in a scratch directory and runs the
migration on it, while this process computes the reference rows; then schema and rows are checked
(`checks`). Scoring:
- the migration must run: an error, refusal or limit hit scores 0;
- integrity is required: `integrity_check` not ok or any `foreign_key_check` row scores 0;
- otherwise score = schema**0.3 * rows**0.7, a weighted geometric mean, so both must be right (a
  perfect schema holding the wrong data scores 0): schema is the share of schema checks passed;
  rows = a**3 with a = max(0, matched - 4 * lost - extra) / expected (steep: a migration that
  corrupts a tenth of the rows keeps about 80% of the credit);
- any lost row (an expected key missing) caps the score at 0.5;
- finally the score is measured from the do-nothing baseline: the same checks applied to the
  untouched source give `base` (some rules leave most rows as they are), and the grade is
  max(0, (score - base) / (1 - base)), so an empty or no-op migration scores 0.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from schema_migration import checks, dbfile, jail
from schema_migration.families import BY_NAME, Probe
from schema_migration.generate import HELDOUT_ROWS, Spec, expected_rows, heldout_rows

SCHEMA_WEIGHT = 0.3
ROW_WEIGHT = 0.7
LOST_PENALTY = 4
LOST_CAP = 0.5


@dataclass(frozen=True)
class Grade:
    score: float
    reason: str
    stage: str
    """Where grading ended: "refused", "error", "crashed", "integrity", "unreadable" or "checked"."""
    schema: float = 0.0
    rows: float = 0.0
    raw: float = 0.0
    """The score before measuring it from the do-nothing baseline."""
    baseline: float = 0.0
    failed_checks: list[str] = field(default_factory=list)
    row_stats: checks.RowStats | None = None
    unchanged_after_error: bool | None = None


def row_score(stats: checks.RowStats) -> float:
    if stats.expected == 0:
        return 1.0
    accuracy = max(0.0, stats.matched - LOST_PENALTY * stats.lost - stats.extra) / stats.expected
    return accuracy**3


def combine(schema: float, rows: float, lost: int) -> float:
    score = schema**SCHEMA_WEIGHT * rows**ROW_WEIGHT
    return min(score, LOST_CAP) if lost else score


def baseline(spec: Spec, rows: Mapping[str, list[tuple]], expected: Mapping[str, list[tuple]], probes: tuple[Probe, ...], scratch_db: Path) -> float:
    """The raw score of a migration that changes nothing: schema checks on an empty copy of the
    source schema (probes included), rows compared in Python."""
    dbfile.to_file(str(scratch_db), spec.source, {})
    conn = sqlite3.connect(scratch_db, isolation_level=None)
    outcomes = []
    for probe in probes:
        conn.execute("SAVEPOINT probe")
        try:
            conn.execute(probe.sql)
            failed = False
        except sqlite3.Error:
            failed = True
        conn.execute("ROLLBACK TO probe")
        conn.execute("RELEASE probe")
        outcomes.append((probe.what, failed == probe.should_fail))
    conn.close()
    results = checks.schema_checks(scratch_db, spec.target, outcomes)
    schema = sum(c.ok for c in results) / len(results)
    stats = checks.noop_row_stats(spec.source, rows, spec.target, expected)
    return combine(schema, row_score(stats), stats.lost)


def grade(
    sql: str,
    spec: Spec,
    rows: Mapping[str, list[tuple]] | None = None,
    limits: jail.Limits = jail.Limits(),
) -> Grade:
    """Grade `sql` on `rows` (default: the spec's held-out rows)."""
    rows = rows if rows is not None else heldout_rows(spec, HELDOUT_ROWS)
    probes = BY_NAME[spec.family].probes(spec.params)
    with tempfile.TemporaryDirectory(prefix="schema-migration-grade-") as scratch:
        db = Path(scratch) / "heldout.sqlite"
        running = jail.start(db, sql, [p.sql for p in probes], limits, dbfile.plan(spec.source, rows))
        expected_db = Path(scratch) / "expected.sqlite"
        try:
            if not running.refused:
                # While the child builds and migrates: the reference rows, stored for the SQL-side
                # comparison, and the do-nothing baseline.
                expected = expected_rows(spec, dict(rows))
                checks.write_expected(expected_db, spec.target, expected)
                base = baseline(spec, rows, expected, probes, Path(scratch) / "baseline.sqlite")
        except BaseException:
            running.kill()
            raise
        report = running.result()
        if report.status != "ok":
            unchanged = ""
            if report.status == "error":
                unchanged = " The database was left unchanged." if report.unchanged else " The database was NOT left unchanged."
            where = f" at statement {report.statement}" if report.statement else ""
            return Grade(0.0, f"migration {report.status}{where}: {report.error}.{unchanged}", report.status, unchanged_after_error=report.unchanged)
        if report.integrity != ["ok"] or report.fk_violations:
            detail = f"{report.fk_violations} foreign_key_check violation(s), e.g. {report.fk_sample[:1]}" if report.fk_violations else f"integrity_check: {report.integrity[:2]}"
            return Grade(0.0, f"integrity required: {detail}.", "integrity")
        probe_results = [(p.what, outcome["failed"] == p.should_fail) for p, outcome in zip(probes, report.probes)]
        try:
            schema_checks = checks.schema_checks(db, spec.target, probe_results)
            stats = checks.row_stats(db, expected_db, spec.target, expected)
        except (SQLAlchemyError, sqlite3.Error) as error:
            return Grade(0.0, f"the migrated database could not be read: {str(error).splitlines()[0]}", "unreadable")
    failed = [c.name for c in schema_checks if not c.ok]
    schema = 1 - len(failed) / len(schema_checks)
    row_part = row_score(stats)
    raw = combine(schema, row_part, stats.lost)
    score = max(0.0, (raw - base) / (1 - base)) if base < 1 else raw
    parts = [
        f"score {score:.3f} (raw {raw:.3f} over a do-nothing baseline of {base:.3f}): schema {schema:.2f}"
        + (f" (failed: {'; '.join(failed[:4])}{' ...' if len(failed) > 4 else ''})" if failed else ""),
        f"rows {stats.matched}/{stats.expected} match ({stats.wrong} wrong, {stats.lost} lost, {stats.extra} extra)"
        + (f", e.g. {stats.example}" if stats.example else ""),
    ]
    if stats.lost:
        parts.append(f"lost rows cap the score at {LOST_CAP}")
    return Grade(round(score, 6), "; ".join(parts) + ".", "checked", schema, row_part, raw, base, failed, stats)
