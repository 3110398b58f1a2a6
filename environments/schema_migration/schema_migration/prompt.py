"""Renders the task prompt, ending in a machine-readable spec block, and parses that block back.

The block repeats what the prose already says (family, knobs, source and target schema) so a
scripted policy can act on the prompt alone; it holds no rows and nothing held out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from schema_migration.families import BY_NAME, Params
from schema_migration.generate import Spec
from schema_migration.schema import Row, Schema
from schema_migration.score import MISS_CAP

__all__ = ["PromptSpec", "examples", "parse", "render", "shown_values"]

BLOCK_OPEN = "<migration-spec>"
BLOCK_CLOSE = "</migration-spec>"


@dataclass(frozen=True)
class PromptSpec:
    """What a policy can read back from a prompt's spec block."""

    family: str
    params: Params
    source: Schema
    target: Schema
    touched: tuple[str, ...]
    db_path: str


def _cell(value: object) -> str:
    return "NULL" if value is None else json.dumps(value, ensure_ascii=False)


def examples(s: Spec) -> tuple[dict[str, list[Row]], dict[str, list[Row]]]:
    """The example rows the prompt shows: (before, after the rules)."""
    family = BY_NAME[s.family]
    before = family.examples(s.params)
    return before, family.transform(s.params, before)


def shown_values(s: Spec) -> tuple[str, ...]:
    """Every example value the prompt shows, as text (what an agent may rehearse on and read back)."""
    return tuple(
        str(v) for table in examples(s) for rows in table.values() for row in rows for v in row if v is not None
    )


def _examples(s: Spec) -> str:
    before, after = examples(s)
    lines: list[str] = []
    for name, rows in before.items():
        cols = s.source.table(name).column_names
        lines.append(f"Before, `{name}` ({', '.join(cols)}):")
        lines += ["  (" + ", ".join(_cell(v) for v in row) + ")" for row in rows]
    for name, rows in after.items():
        cols = (
            s.target.table(name).column_names
            if s.target.has_table(name)
            else next(v.columns for v in s.target.views if v.name == name)
        )
        kind = "view" if not s.target.has_table(name) else "table"
        lines.append(f"After, {kind} `{name}` ({', '.join(cols)}):")
        lines += ["  (" + ", ".join(_cell(v) for v in row) + ")" for row in sorted(rows, key=lambda r: str(r[0]))]
    return "\n".join(lines)


def render(s: Spec, db_path: str, budget: int, free: int) -> str:
    family = BY_NAME[s.family]
    _, touched_target = family.schemas(s.params)
    block = {
        "family": s.family,
        "params": s.params,
        "db_path": db_path,
        "touched": list(s.touched),
        "source": s.source.to_json(),
        "target": s.target.to_json(),
    }
    unchanged = ", ".join(f"`{n}`" for n in s.fillers)
    return f"""# Schema migration: {family.title}

A SQLite 3.40 database is at `{db_path}` in your container. Write a migration (SQL) that turns it into
the target schema below, following the rules exactly, and submit it once with `submit_migration`.

Tools (server `sqlite_sandbox`): `schema` shows the database; `execute` runs SQL as one all-or-nothing
transaction; `checkpoint`/`restore`/`rollback` save and bring back copies of the database; `budget` shows
what you have used; `submit_migration` is the ONLY way to hand in your answer. You may also use the
`sqlite3` command line on the same file. Each `execute` call costs 1 statement of your budget of {budget};
up to {free} calls are free, and every call beyond that lowers your score.

## Current schema
{s.source.ddl()}

## Target schema (tables the migration changes)
{touched_target.ddl()}

All other tables ({unchanged}) and their indexes, views and triggers must stay exactly as they are.
Column order, constraint names and index names are not graded; columns, type affinity, NOT NULL,
primary keys, foreign keys, UNIQUE, indexes and CHECK behaviour are.

## Rules
{family.rules(s.params)}

## Examples (these rows are illustrations, not rows of your database)
{_examples(s)}

## Grading
After the episode the grader runs your submitted migration once, as a single transaction, on a fresh
copy of this database that holds different and many more rows, with more awkward values (NULLs, empty
strings, stray spaces, unicode, duplicates, boundary numbers). Migrations that hard-code values you see
here will fail there. BEGIN/COMMIT/END in the migration are ignored; a bare ROLLBACK, ATTACH, DETACH,
VACUUM, load_extension and most PRAGMAs make it fail. Foreign-key enforcement is off while it runs, but
`PRAGMA foreign_key_check` and `PRAGMA integrity_check` must pass afterwards or the score is 0. If the
migration raises an error the database is left unchanged and the score is 0. The grader checks the
file your migration leaves behind (TEMP objects do not survive): every stated requirement above must
hold, and missing any one caps the score at {MISS_CAP}; every row must match the rules exactly, and 1 % of
the rows wrong, lost or extra halves the score (2 % scores 0).

{BLOCK_OPEN}
{json.dumps(block, ensure_ascii=False)}
{BLOCK_CLOSE}
"""


def parse(text: str) -> PromptSpec | None:
    """The spec block of a prompt (or of any text containing one), or None."""
    match = re.search(re.escape(BLOCK_OPEN) + r"\s*(\{.*?\})\s*" + re.escape(BLOCK_CLOSE), text, re.S)
    if not match:
        return None
    try:
        data = json.loads(match.group(1))
        return PromptSpec(
            family=data["family"],
            params=data["params"],
            source=Schema.from_json(data["source"]),
            target=Schema.from_json(data["target"]),
            touched=tuple(data["touched"]),
            db_path=data["db_path"],
        )
    except (ValueError, KeyError, TypeError):
        return None
