"""Grades a migration: runs it on fresh held-out databases in a confined child process, then scores it.

This is the grader's I/O edge: it reads the host's task secret the held-out data is drawn from
(`heldout.key`), screens the SQL (size, NUL, text that is not Unicode, statements),
prepares what it knows before seeing the migration (`prepared`: databases, reference rows, battery,
the reference's own cost), writes the files into a scratch directory, runs the child (`jail`) under a
budget derived from that cost (`budget`), and hands the reports to the pure scoring (`score`).
Nothing here runs agent SQL in this process, and `grade` never raises on any input: a fault of the
grader itself is a 0 with its reason.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from schema_migration import heldout, jail
from schema_migration.budget import Limits, file_mb, spend
from schema_migration.generate import Spec, heldout_rows
from schema_migration.prepared import Prepared, prepared, world_request
from schema_migration.schema import Row
from schema_migration.score import Grade, cap, score

from sqlite_sandbox.state import SandboxConfig

__all__ = ["MAX_SQL_BYTES", "Grade", "grade", "screen"]

MAX_SQL_BYTES = SandboxConfig().max_sql_bytes
"""The largest migration the grader reads: what `submit_migration` accepts."""


def screen(sql: object) -> str:
    """Why the grader refuses `sql` before running anything, or ""."""
    if not isinstance(sql, str):
        return f"the migration is not text ({type(sql).__name__})"
    if "\x00" in sql:
        return "the migration contains a NUL character"
    try:
        size = len(sql.encode("utf-8"))
    except UnicodeEncodeError as error:
        return f"the migration is not valid Unicode text (a lone surrogate at character {error.start})"
    if size > MAX_SQL_BYTES:
        return f"the migration is {size} bytes; the limit is {MAX_SQL_BYTES}"
    return ""


def _run(sql: str, p: Prepared, limits: Limits) -> Grade:
    statements, refused = jail.prepare(sql)
    if refused:
        return Grade(0.0, cap(f"migration refused: {refused}."), "refused")
    with tempfile.TemporaryDirectory(prefix="schema-migration-grade-") as scratch:
        worlds = []
        for k, w in enumerate(p.worlds):
            request = world_request(p.spec, p.kept, w, k, spend(w.cost, limits).request())
            request["plan"] = {**request["plan"], "path": f"expected{k}.sqlite"}
            (Path(scratch) / request["db"]).write_bytes(w.db)
            (Path(scratch) / request["plan"]["path"]).write_bytes(w.plan_file)
            worlds.append(request)
        biggest = max(max(w.cost.file_bytes, len(w.db)) for w in p.worlds)
        reports = jail.run(Path(scratch), statements, worlds, limits, file_mb(biggest, limits))
    return score(reports, p)


def grade(
    sql: str, spec: Spec, rows: Mapping[str, list[Row]] | None = None, limits: Limits = Limits(), key: int | None = None
) -> Grade:
    """Grade `sql` on `rows` (default: the task's held-out rows) and the family's extra databases,
    both drawn from `key` (default: this host's, `heldout.key`)."""
    why = screen(sql)
    if why:
        return Grade(0.0, cap(f"migration refused: {why}."), "refused")
    try:
        key = heldout.key(spec.seed) if key is None else key
        p = prepared(spec, rows if rows is not None else heldout_rows(spec, key=key), key, limits)
        return _run(sql, p, limits)
    except Exception as error:  # noqa: BLE001  (the grader's own fault: a grade with its reason, never a raise)
        return Grade(
            0.0,
            cap(f"grading failed ({type(error).__name__}): a fault of the grader, not of the migration."),
            "crashed",
        )
