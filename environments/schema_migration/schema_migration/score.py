"""Scores a migration from the confined child's reports: a pure function of (reports, what the grader prepared).

- the migration must run on every held-out database: an error, refusal, limit hit or crash scores 0;
- integrity is required: `integrity_check` not ok or any `foreign_key_check` row scores 0;
- schema gate S: every stated requirement is one check (each target table is a table with exactly
  its columns, generated ones included, their affinity and NOT NULL, its primary key, foreign keys
  (with no ON DELETE / ON UPDATE action, as the target states none), UNIQUE and indexes; each
  compatibility view with its columns; each trigger; no other tables; no other triggers; each
  untouched table, index, view and trigger with its stored SQL unchanged (whitespace aside) and each
  untouched view showing the same rows; every row of each untouched or small object as expected
  (small: under `checks.MAIN_SHARE` of the largest object's rows, e.g. lookups and placeholder
  parents); every value class of the rules with each of its rows as the rules say; each group of
  the later-write battery accepting, refusing and leaving behind what the target does; each extra
  held-out database (e.g. one without orphans) right in every check and row). S = 1 if all pass,
  else 0.25 * passed / checks: one miss caps the score at 0.25, half the worst a correct migration
  earns (the taskset's turn counterweight falls to x0.5), so a wrong migration scores below every right one;
- rows R: per target table and view, bad = wrong + lost + extra rows (INTEGER and TEXT values
  exact and of the same type, REAL within a relative 1e-9), r = max(0, 1 - 50 * bad / expected);
  R = the smallest r: 1 % of any object's rows wrong halves R, 2 % zeroes it;
- score = S * R. A migration that changes nothing gets most rows wrong and scores 0.
Column order is not graded. Reasons are capped at `REASON_CHARS` and never quote a held-out value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from schema_migration import checks
from schema_migration.checks import Check, RowStats
from schema_migration.families import BY_NAME
from schema_migration.jail import JailReport
from schema_migration.prepared import Prepared, World
from schema_migration.schema import Row

__all__ = [
    "MISS_CAP",
    "REASON_CHARS",
    "ROW_SLOPE",
    "Grade",
    "battery_checks",
    "cap",
    "redact",
    "row_factor",
    "schema_gate",
    "score",
    "worst_row_factor",
]

MISS_CAP = 0.25
"""S when any stated requirement is missed is at most this: half the worst a correct migration scores
(the turn counterweight's floor, 0.5), so a migration that breaks a stated rule scores below every correct one."""
ROW_SLOPE = 50
"""R falls by this much per unit share of bad rows: 1 % bad -> 0.5, 2 % -> 0."""
REASON_CHARS = 500
SHOWN_FAILURES = 3
SHOWN_CHARS = 110
"""Each missed requirement shown in a reason at most this long (the rows' summary comes first)."""


@dataclass(frozen=True)
class Grade:
    score: float
    reason: str
    stage: str
    """Where grading ended: "refused", "error", "crashed", "integrity", "unreadable" or "checked"."""
    schema: float = 0.0
    """The schema gate S (1, or below `MISS_CAP`)."""
    rows: float = 0.0
    """The row factor R."""
    failed_checks: list[str] = field(default_factory=list)
    checks: int = 0
    row_stats: RowStats | None = None
    unchanged_after_error: bool | None = None
    steps: int = 0
    """SQLite VM steps the migration took on the main held-out database: its CPU work, the same on any machine."""
    read_steps: int = 0
    """SQLite VM steps reading the result back took (facts, battery, rows)."""


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
    seen = {
        v for table in rows.values() for row in table for v in row if isinstance(v, str) and len(v) >= 3 and v in text
    }
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
        text += f"; {name} could not be read: {cap(why, 120)}"
    return text


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def battery_checks(got: Sequence[Any], world: World) -> list[Check]:
    """One check per battery group: every scenario's steps accepted or refused as by the reference,
    returning the same rows, leaving the same row-count changes and rows behind (differences only in
    a view: the view's check)."""
    objects = [o["name"] for o in world.battery.objects]
    views = sorted(o["name"] for o in world.battery.objects if o["kind"] == "view")
    groups = list(dict.fromkeys(s.group for s in world.battery.scenarios)) + [
        f"view {v} shows later writes as the target's" for v in views
    ]
    first_miss: dict[str, str] = {}
    for k, scenario in enumerate(world.battery.scenarios):
        mine = got[k] if k < len(got) else None
        if mine is None:
            first_miss.setdefault(scenario.group, f"{scenario.label}: not run")
            continue
        for (ok, fetched, effects), (want_ok, want_fetched, want_effects) in zip(mine, world.outcomes[k]):
            if ok != want_ok:
                how = "accepted by the target, refused here" if want_ok else "refused by the target, accepted here"
                first_miss.setdefault(scenario.group, f"{scenario.label}: {how}")
                break
            if not _same(fetched, want_fetched):
                first_miss.setdefault(scenario.group, f"{scenario.label}: returns other rows than the target's")
                break
            differ = [name for name, a, b in zip(objects, effects, want_effects) if not _same(a, b)]
            for name in differ:
                group = f"view {name} shows later writes as the target's" if name in views else scenario.group
                first_miss.setdefault(group, f"{scenario.label}: leaves different rows in {name}")
            if differ:
                break
    return [
        Check(group + (f" ({first_miss[group]})" if group in first_miss else ""), group not in first_miss)
        for group in groups
    ]


def _class_checks(report: JailReport, p: Prepared) -> list[Check]:
    """One check per value class: each of its rows as the rules say, in every object derived from its table."""
    derived = BY_NAME[p.spec.family].derived(p.spec.params)
    bad: dict[str, set[Any] | None] = {}
    for r in report.rows:
        table = derived.get(r["name"])
        if table is None:
            continue
        if r.get("bad_keys") is None:
            bad[table] = None  # unreadable: every row of the table counts as wrong
        elif (found := bad.setdefault(table, set())) is not None:
            found.update(r["bad_keys"])
    out = []
    for name, (table, keys) in p.classes.items():
        wrong_keys = bad.get(table, set())
        wrong = keys if wrong_keys is None else [k for k in keys if k in wrong_keys]
        out.append(
            Check(
                f"value class '{name}' as the rules say"
                + (f" ({len(wrong)} of {len(keys)} rows not)" if wrong else ""),
                not wrong,
            )
        )
    return out


def _world_checks(report: JailReport, p: Prepared, world: World) -> list[Check]:
    results = checks.schema_checks(report.facts, p.spec.target, p.kept)
    results += checks.row_checks(report.rows, {t.name for t in p.kept.tables} | {v.name for v in p.kept.views})
    return results + battery_checks(report.battery, world)


def _stopped(report: JailReport, p: Prepared) -> Grade | None:
    """The grade of a world that did not get to the checks (or failed integrity), else None."""
    where = "" if report.name in ("", "main") else f" on the extra held-out database '{report.name}'"
    if report.status in ("refused", "error", "crashed"):
        at = f" at statement {report.statement}" if report.statement else ""
        unchanged = ""
        if report.status == "error":
            unchanged = (
                " The database was left unchanged." if report.unchanged else " The database was NOT left unchanged."
            )
        reason = f"migration {report.status}{where}{at}: {redact(report.error, p.rows)}.{unchanged}"
        return Grade(0.0, cap(reason), report.status, unchanged_after_error=report.unchanged, steps=report.steps)
    if report.status != "ok":
        what = (
            "integrity could not be checked"
            if report.status == "integrity"
            else "the migrated database could not be read"
        )
        return Grade(0.0, cap(f"{what}{where}: {redact(report.error, p.rows)}."), report.status, steps=report.steps)
    if report.integrity != ["ok"] or report.fk_violations:
        detail = (
            f"{report.fk_violations} foreign_key_check violation(s) in {', '.join(report.fk_tables)}"
            if report.fk_violations
            else f"integrity_check: {redact('; '.join(report.integrity[:2]), p.rows)}"
        )
        return Grade(0.0, cap(f"integrity required{where}: {detail}."), "integrity", steps=report.steps)
    return None


def score(reports: Sequence[JailReport], p: Prepared) -> Grade:
    """The grade of the migration the child ran and read back, one report per held-out database."""
    for report in reports:
        if (stopped := _stopped(report, p)) is not None:
            return stopped
    if len(reports) < len(p.worlds):
        return Grade(0.0, "the migration process stopped before every held-out database was graded.", "crashed")
    main = reports[0]
    results = _world_checks(main, p, p.worlds[0]) + _class_checks(main, p)
    for report, world in zip(reports[1:], p.worlds[1:]):
        extra = _world_checks(report, p, world)
        missed = [c.name for c in extra if not c.ok]
        right = not missed and worst_row_factor(report.rows) == 1.0
        detail = "" if right else f" ({missed[0] if missed else 'rows wrong'})"
        results.append(
            Check(
                f"on the extra held-out database '{world.name}' every requirement and row as the rules say{detail}",
                right,
            )
        )
    failed = [c.name for c in results if not c.ok]
    stats = checks.row_stats(main.rows)
    if stats.errors:
        stats = checks.RowStats(**{**stats.__dict__, "errors": {k: redact(v, p.rows) for k, v in stats.errors.items()}})
    schema, row_part = schema_gate(len(results) - len(failed), len(results)), worst_row_factor(main.rows)
    total = schema * row_part
    head = f"score {total:.3f} = schema {schema:.3f} x rows {row_part:.3f}"
    if failed:
        shown = "; ".join(cap(name, SHOWN_CHARS) for name in failed[:SHOWN_FAILURES])
        more = f"; +{len(failed) - SHOWN_FAILURES} more" if len(failed) > SHOWN_FAILURES else ""
        schema_text = f"{len(failed)} of {len(results)} requirements missed, score capped at {MISS_CAP} ({shown}{more})"
    else:
        schema_text = f"all {len(results)} requirements met"
    reason = cap(f"{head}: {_rows_text(stats)}; {schema_text}.")
    return Grade(
        round(total, 6),
        reason,
        "checked",
        schema,
        row_part,
        failed,
        len(results),
        stats,
        steps=main.steps,
        read_steps=main.read_steps,
    )
