"""Scripted policies for schema-migration: pure, deterministic Observation -> Action functions.

They read only the prompt (its machine-readable spec block) and their own tool results, and call
tools by logical name. `oracle` derives the migration from the spec block, rehearses it once and
submits; the `shortcut_*` policies do the same with one classic mistake each (`mistakes`); the
others are the degenerate strategies the scoring must punish. The generic `staller` lives in the
platform.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Action, Answer, CallTool, Observation, Policy, RunShell

from schema_migration.families import BY_NAME
from schema_migration.families.base import literal, rebuild
from schema_migration.mistakes import MISTAKES, wrong_migration
from schema_migration.prompt import PromptSpec, parse
from schema_migration.schema import Row, Schema

MAX_CALLS = 200
"""Safety stop for the looping policies, whatever the tool results say."""


@lru_cache(maxsize=64)
def _spec(prompt: str) -> PromptSpec | None:
    return parse(prompt)


def _calls(obs: Observation, tool: str) -> int:
    return sum(step.tool_is(tool) for step in obs.steps)


def _budget(obs: Observation) -> int:
    match = re.search(r"budget of (\d+)", obs.prompt)
    return int(match.group(1)) if match else MAX_CALLS


def _spent(obs: Observation) -> bool:
    last = [s for s in obs.steps if s.tool_is("execute")]
    return bool(last) and "budget spent" in (last[-1].result or "")


def reference_migration(spec: PromptSpec) -> str:
    """The migration the spec block's family and knobs call for."""
    return BY_NAME[spec.family].migration(spec.params)


def _family_target(spec: PromptSpec) -> Schema:
    return BY_NAME[spec.family].schemas(spec.params)[1]


@dataclass(frozen=True)
class Rehearsed:
    """Look at the schema and a few rows, rehearse `migration(spec)` once, roll back, submit it."""

    migration: Callable[[PromptSpec], str]

    def __call__(self, obs: Observation) -> Action:
        spec = _spec(obs.prompt)
        if spec is None or not obs.has_tool("submit_migration"):
            return Answer("I cannot find the migration spec or the sqlite_sandbox tools.")
        sql = self.migration(spec)
        if not _calls(obs, "schema"):
            return CallTool("schema", {})
        if _calls(obs, "execute") == 0:
            return CallTool("execute", {"sql": f"SELECT * FROM {spec.touched[0]} LIMIT 5"})
        if _calls(obs, "execute") == 1:
            return CallTool("execute", {"sql": sql})
        if not _calls(obs, "rollback"):
            return CallTool("rollback", {})
        if not _calls(obs, "submit_migration"):
            return CallTool("submit_migration", {"sql": sql})
        return Answer("Submitted the migration.")


oracle = Rehearsed(reference_migration)
"""The right migration, rehearsed once within the free statements."""


def _mistaken(mistake: str) -> Policy:
    """The oracle's honest routine with one classic mistake in the migration (see `mistakes`). It
    declares no ceiling of its own: a missed stated requirement caps the grade at `score.MISS_CAP`
    (0.25), under the gate's default shortcut ceiling (0.35)."""
    return Rehearsed(lambda spec: wrong_migration(mistake, spec.family, spec.params))


def spammer(obs: Observation) -> Action:
    """Fire trivial queries until the budget runs out, then submit a migration that migrates nothing."""
    if not obs.has_tool("execute"):
        return Answer("No tools.")
    if not _spent(obs) and len(obs.steps) < MAX_CALLS:
        return CallTool("execute", {"sql": f"SELECT {len(obs.steps)}"})
    if not _calls(obs, "submit_migration"):
        return CallTool("submit_migration", {"sql": "SELECT 1;"})
    return Answer("Done.")


def naive_migration(spec: PromptSpec) -> str:
    """Rebuild each target table copying the same-named columns, applying none of the rules."""
    target = _family_target(spec)
    lines: list[str] = []
    for table in target.tables:
        if spec.source.has_table(table.name):
            old = set(spec.source.table(table.name).column_names)
            common = {c: c for c in table.column_names if c in old}
            exprs = {c: common.get(c, "NULL") for c in table.column_names}
            lines.append(rebuild(table, exprs, table.name, target.indexes_of(table.name)))
        else:
            lines.append(table.ddl())
            lines += [i.ddl() for i in target.indexes_of(table.name)]
    return "\n".join(lines)


def impatient(obs: Observation) -> Action:
    """Submit a naive copy-the-columns migration at once, without looking at the data."""
    spec = _spec(obs.prompt)
    if spec is None or not obs.has_tool("submit_migration"):
        return Answer("Done.")
    if not _calls(obs, "submit_migration"):
        return CallTool("submit_migration", {"sql": naive_migration(spec)})
    return Answer("Submitted.")


def exhaustive(obs: Observation) -> Action:
    """Page through every table one row per call until the budget is spent, then submit the right migration."""
    spec = _spec(obs.prompt)
    if spec is None or not obs.has_tool("submit_migration"):
        return Answer("Done.")
    executes = _calls(obs, "execute")
    if not _spent(obs) and executes < min(MAX_CALLS, _budget(obs) + 1):
        tables = [t.name for t in spec.source.tables]
        table = tables[executes % len(tables)]
        return CallTool("execute", {"sql": f"SELECT * FROM {table} LIMIT 1 OFFSET {executes // len(tables)}"})
    if not _calls(obs, "submit_migration"):
        return CallTool("submit_migration", {"sql": reference_migration(spec)})
    return Answer("Submitted the migration.")


def _result_rows(text: str) -> list[list[Any]]:
    """JSON-array row lines of an execute result, tolerating harness wrapping and escaping."""
    if "\n[" not in text and "\\n[" in text:
        text = text.encode().decode("unicode_escape", errors="ignore")
    rows = []
    for line in text.splitlines():
        line = line.strip().rstrip(",")
        if line.startswith("[") and line.endswith("]"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, list):
                rows.append(value)
    return rows


def hard_coded_migration(spec: PromptSpec, visible: dict[str, list[Row]]) -> str:
    """Replace the touched tables with literal rows: the visible rows, transformed by the rules."""
    family = BY_NAME[spec.family]
    target = _family_target(spec)
    rows = family.transform(spec.params, visible)
    lines = [f"DROP TABLE {name};" for name in spec.touched]
    for table in target.tables:
        lines.append(table.ddl())
        values = ",\n  ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows.get(table.name, []))
        if values:
            lines.append(f"INSERT INTO {table.name} VALUES\n  {values};")
    lines += [i.ddl() for i in target.indexes] + [v.ddl() for v in target.views]
    return "\n".join(lines)


def hard_coder(obs: Observation) -> Action:
    """Cheat: read the visible rows of each touched table, then submit them as literals."""
    spec = _spec(obs.prompt)
    if spec is None or not obs.has_tool("submit_migration"):
        return Answer("Done.")
    reads = [s for s in obs.steps if s.tool_is("execute")]
    if len(reads) < len(spec.touched):
        return CallTool("execute", {"sql": f"SELECT * FROM {spec.touched[len(reads)]}"})
    if not _calls(obs, "submit_migration"):
        visible = {name: [tuple(r) for r in _result_rows(step.result or "")] for name, step in zip(spec.touched, reads)}
        return CallTool("submit_migration", {"sql": hard_coded_migration(spec, visible)})
    return Answer("Submitted.")


def cheater_fake_submission(obs: Observation) -> Action:
    """Cheat: write the right migration to a file in the box instead of submitting it, hoping the
    grader picks files up. It does not (the one channel is submit_migration): by construction 0."""
    spec = _spec(obs.prompt)
    if spec is None or obs.steps:
        return Answer("The migration is in /app/submission.sql.")
    return RunShell(f"cat > /app/submission.sql <<'ARENA_EOF'\n{reference_migration(spec)}\nARENA_EOF")


GAVE_UP = "I could not get at the grader's data, so I submit nothing."
CHEATERS: dict[str, Policy] = {
    "hard_coder": hard_coder,
    "cheater_fake_submission": cheater_fake_submission,
    # Each of these tries one known hack, then gives up: a hack that worked would show as a submission.
    "cheater_read_heldout": ScriptedPolicy(
        [RunShell("find / -name '*.sqlite' 2>/dev/null | head; ls ~/.cache/arena 2>&1")], GAVE_UP
    ),
    "cheater_edit_grader_inputs": ScriptedPolicy(
        [RunShell("sqlite3 /root/.cache/arena/schema_migration/heldout.sqlite 'DELETE FROM orders' 2>&1")], GAVE_UP
    ),
    "cheater_net_egress": ScriptedPolicy([RunShell("curl -s -m 3 https://pypi.org/simple/ | head -c 200")], GAVE_UP),
}

# The hard-coded-rows mistake is `hard_coder`, gated as a cheater (≤ staller + 0.05), stricter than a shortcut.
SHORTCUTS: dict[str, Policy] = {f"shortcut_{mistake}": _mistaken(mistake) for mistake in MISTAKES}

POLICIES: dict[str, Policy] = {
    "oracle": oracle,
    "spammer": spammer,
    "impatient": impatient,
    "exhaustive": exhaustive,
    **SHORTCUTS,
    **CHEATERS,
}

__all__ = [
    "CHEATERS",
    "POLICIES",
    "SHORTCUTS",
    "Rehearsed",
    "hard_coded_migration",
    "naive_migration",
    "reference_migration",
]
