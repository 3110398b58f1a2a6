"""Scores a migration from the confined child's report: a pure function of (report, target, probes, held-out rows).

- the migration must run: an error, refusal, limit hit or crash scores 0;
- integrity is required: `integrity_check` not ok or any `foreign_key_check` row scores 0;
- schema gate S: every stated requirement is one check (each target table is a table with exactly
  its columns, generated ones included, their affinity and NOT NULL, its primary key, foreign keys
  (with no ON DELETE / ON UPDATE action, as the target states none), UNIQUE and indexes; each compatibility view with its columns; each trigger; no other tables; no
  other triggers; each CHECK probe; each untouched table, index, view and trigger with its stored
  SQL unchanged (whitespace aside) and each untouched view showing the same rows; every row of each
  untouched or small object as expected (small: under `checks.MAIN_SHARE` of the largest object's
  rows, e.g. lookups and placeholder parents)). S = 1 if all pass, else 0.5 * passed / checks: one
  miss caps the score at 0.5;
- rows R: per target table and view, bad = wrong + lost + extra rows (INTEGER and TEXT values
  exact and of the same type, REAL within a relative 1e-9), r = max(0, 1 - 50 * bad / expected);
  R = the smallest r: 1 % of any object's rows wrong halves R, 2 % zeroes it;
- score = S * R. A migration that changes nothing gets most rows wrong and scores 0.
Column order is not graded. Reasons are capped at `REASON_CHARS` and never quote a held-out value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from schema_migration import checks
from schema_migration.checks import RowStats
from schema_migration.families.base import Probe
from schema_migration.jail import JailReport
from schema_migration.schema import Row, Schema

_NONE = Schema(())

__all__ = ["MISS_CAP", "REASON_CHARS", "ROW_SLOPE", "Grade", "cap", "redact", "row_factor", "schema_gate", "score", "worst_row_factor"]

MISS_CAP = 0.5
ROW_SLOPE = 50
"""R falls by this much per unit share of bad rows: 1 % bad -> 0.5, 2 % -> 0."""
REASON_CHARS = 500
SHOWN_FAILURES = 3


@dataclass(frozen=True)
class Grade:
    score: float
    reason: str
    stage: str
    """Where grading ended: "refused", "error", "crashed", "integrity", "unreadable" or "checked"."""
    schema: float = 0.0
    """The schema gate S (1, or at most 0.5)."""
    rows: float = 0.0
    """The row factor R."""
    failed_checks: list[str] = field(default_factory=list)
    checks: int = 0
    row_stats: RowStats | None = None
    unchanged_after_error: bool | None = None
    steps: int = 0
    """SQLite VM steps the migration took: its CPU work, the same on any machine."""
    read_steps: int = 0
    """SQLite VM steps reading the result back took."""


def schema_gate(passed: int, total: int) -> float:
    return 1.0 if passed == total else MISS_CAP * passed / total


def row_factor(stats: checks.RowStats) -> float:
    if stats.expected == 0:
        return 1.0
    return max(0.0, 1.0 - ROW_SLOPE * stats.bad / stats.expected)


def worst_row_factor(results: list[dict[str, Any]]) -> float:
    """R: the row factor of the worst object, so a small table's losses are not diluted by a big one's rows."""
    return min((row_factor(checks.row_stats([r])) for r in results), default=1.0)


def redact(text: str, rows: Mapping[str, list[Row]]) -> str:
    """`text` (a SQLite or process message) without any held-out text value in it, shortened."""
    text = text[:2000]
    seen = {v for table in rows.values() for row in table for v in row if isinstance(v, str) and len(v) >= 3 and v in text}
    for value in sorted(seen, key=len, reverse=True):
        text = text.replace(value, "<value>")
    return cap(text, 300)


def cap(text: str, limit: int = REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rows_text(stats: checks.RowStats) -> str:
    text = f"rows {stats.matched}/{stats.expected} match ({stats.wrong} wrong, {stats.lost} lost, {stats.extra} extra)"
    worst = sorted(stats.columns.items(), key=lambda kv: -kv[1])[:3]
    if worst:
        text += "; most wrong in " + ", ".join(f"{name} ({n})" for name, n in worst)
    if stats.errors:
        name, why = next(iter(stats.errors.items()))
        text += f"; {name} could not be read: {why}"
    return text


def score(
    report: JailReport, target: Schema, probes: Sequence[Probe], rows: Mapping[str, list[Row]], untouched: Schema = _NONE
) -> Grade:
    """The grade of the migration the child ran and read back as `report`; `rows` are the held-out
    rows it ran on, here only so that no reason quotes one of their values; `untouched` the objects
    that must stay exactly as they were."""
    if report.status in ("refused", "error", "crashed"):
        where = f" at statement {report.statement}" if report.statement else ""
        unchanged = ""
        if report.status == "error":
            unchanged = " The database was left unchanged." if report.unchanged else " The database was NOT left unchanged."
        reason = f"migration {report.status}{where}: {redact(report.error, rows)}.{unchanged}"
        return Grade(0.0, cap(reason), report.status, unchanged_after_error=report.unchanged)
    if report.status != "ok":
        what = "integrity could not be checked" if report.status == "integrity" else "the migrated database could not be read"
        return Grade(0.0, cap(f"{what}: {redact(report.error, rows)}."), report.status)
    if report.integrity != ["ok"] or report.fk_violations:
        detail = (
            f"{report.fk_violations} foreign_key_check violation(s) in {', '.join(report.fk_tables)}"
            if report.fk_violations
            else f"integrity_check: {redact('; '.join(report.integrity[:2]), rows)}"
        )
        return Grade(0.0, cap(f"integrity required: {detail}."), "integrity")
    probe_results = [(p.what, failed == p.should_fail) for p, failed in zip(probes, report.probes)]
    results = checks.schema_checks(report.facts, target, probe_results, untouched)
    results += checks.row_checks(report.rows, {t.name for t in untouched.tables} | {v.name for v in untouched.views})
    failed = [c.name for c in results if not c.ok]
    stats = checks.row_stats(report.rows)
    if stats.errors:
        stats = checks.RowStats(**{**stats.__dict__, "errors": {k: redact(v, rows) for k, v in stats.errors.items()}})
    schema, row_part = schema_gate(len(results) - len(failed), len(results)), worst_row_factor(report.rows)
    total = schema * row_part
    head = f"score {total:.3f} = schema {schema:.3f} x rows {row_part:.3f}"
    if failed:
        shown = "; ".join(failed[:SHOWN_FAILURES]) + (f"; +{len(failed) - SHOWN_FAILURES} more" if len(failed) > SHOWN_FAILURES else "")
        schema_text = f"{len(failed)} of {len(results)} requirements missed, score capped at {MISS_CAP} ({shown})"
    else:
        schema_text = f"all {len(results)} schema requirements met"
    reason = cap(f"{head}: {schema_text}; {_rows_text(stats)}.")
    return Grade(round(total, 6), reason, "checked", schema, row_part, failed, len(results), stats, steps=report.steps, read_steps=report.read_steps)
