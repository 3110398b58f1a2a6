"""Builds every single-edit mutant of a task's reference migration, each with a key that does not depend on the seed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import cast

import sqlglot
from sqlglot import exp

from arena_kit.adversaries.mutation.operators import Mutant
from schema_migration.families import BY_NAME
from schema_migration.generate import Spec
from schema_migration.mutants.careless import CARELESS, guards
from schema_migration.mutants.operators import OPERATORS, Variant, apply, edits
from sqlite_sandbox.engine import split_statements

__all__ = ["mutants", "parse", "render", "roundtrip"]

DIALECT = "sqlite"
CONTEXT_CHARS = 40
"""A fragment is shown with its enclosing expression, and further out while shorter than this, so the key says where it is."""
KEY_CHARS = 160
SHOWN_AROUND = 60


def parse(sql: str) -> list[tuple[str, exp.Expression]]:
    """(original text, tree) per statement of `sql`."""
    return [(text, cast(exp.Expression, sqlglot.parse_one(text, read=DIALECT))) for text in split_statements(sql)]


def render(tree: exp.Expression) -> str:
    return tree.sql(dialect=DIALECT) + ";"


def _names(params: object, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(params, dict):
        for key, value in params.items():
            yield from _names(value, f"{path}.{key}" if path else key)
    elif isinstance(params, list):
        for i, value in enumerate(params):
            yield from _names(value, f"{path}[{i}]")
    elif isinstance(params, str) and params.isidentifier():
        yield params, path


def _normaliser(params: object) -> re.Pattern[str] | None:
    names = sorted({value for value, _ in _names(params)}, key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])") if names else None


def _neutral(tree: exp.Expression, params: object) -> str:
    """`tree` as SQL with identifiers that are (or embed) a parameter value spelled as `{parameter}`."""
    pattern = _normaliser(params)
    where = {value: path for value, path in _names(params)}
    if pattern is None:
        return tree.sql(dialect=DIALECT)

    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Identifier):
            return exp.to_identifier(pattern.sub(lambda m: "{" + where[m.group(1)] + "}", node.name))
        return node

    return tree.copy().transform(rename).sql(dialect=DIALECT)


def _context(tree: exp.Expression, k: int) -> tuple[exp.Expression, int]:
    """The node to show for an edit of `tree`'s `k`-th node, and the node's position inside it."""
    node = list(tree.walk())[k]
    shown = node
    while (
        shown.parent is not None
        and (shown is node or len(shown.sql(dialect=DIALECT)) < CONTEXT_CHARS)
        and not isinstance(shown.parent, (exp.Query, exp.DDL, exp.DML, exp.Schema, exp.Where, exp.Order, exp.Case))
    ):
        shown = shown.parent
    return cast(exp.Expression, shown), next(i for i, n in enumerate(shown.walk()) if n is node)


def _diff(before: str, after: str) -> tuple[str, str]:
    """The two texts cut to where they differ, with `SHOWN_AROUND` characters of context (marked `…`)."""
    p = 0
    while p < min(len(before), len(after)) and before[p] == after[p]:
        p += 1
    q = 0
    while q < min(len(before), len(after)) - p and before[-1 - q] == after[-1 - q]:
        q += 1
    start = max(0, p - SHOWN_AROUND)

    def cut(text: str) -> str:
        end = min(len(text), len(text) - q + SHOWN_AROUND)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(before), cut(after)


def _key(op: str, tree: exp.Expression, k: int, variant: Variant, params: object) -> str:
    shown, at = _context(tree, k)
    before = _neutral(shown, params)
    if shown is list(tree.walk())[k] and variant is None:
        return f"{op}: {before[:KEY_CHARS]} -> (removed)"
    return "{}: {} -> {}".format(op, *_diff(before, _neutral(apply(shown, at, variant), params)))


def mutants(s: Spec) -> list[Mutant]:
    """Every distinct single-edit mutant of `s`'s reference migration (first operator wins a tie).

    A mutant's answer (its SQL) is the reference's statements with one statement re-rendered by sqlglot after one
    edit (or left out); the other statements keep their original text. Its key names the operator and
    the edited fragment in context, with the task's table and column names replaced by their parameter
    names (`{table}`, `{parts[1]}`), so the equivalence table can name a mutant once for every seed.
    """
    statements = parse(BY_NAME[s.family].migration(s.params))
    texts = [text for text, _ in statements]
    out: list[Mutant] = []
    seen = {"\n".join(texts), "\n".join(render(tree) for _, tree in statements)}
    counts: dict[str, int] = {}

    def add(op: str, key: str, sql_texts: list[str]) -> None:
        sql = "\n".join(sql_texts)
        if sql in seen:
            return
        seen.add(sql)
        counts[key] = counts.get(key, 0) + 1
        out.append(Mutant(s.family, op, key if counts[key] == 1 else f"{key} #{counts[key]}", sql))

    for i, (_, tree) in enumerate(statements):
        for op, k, variant in edits(tree, OPERATORS + CARELESS):
            add(
                op.name,
                _key(op.name, tree, k, variant, s.params),
                texts[:i] + [render(apply(tree, k, variant))] + texts[i + 1 :],
            )
    for i, guarded, exists in guards([tree for _, tree in statements]):
        key = f"guard_insert: {_neutral(statements[i][1], s.params)[:KEY_CHARS]} only if {_neutral(exists, s.params)[:KEY_CHARS]}"
        add("guard_insert", key, texts[:i] + [render(guarded)] + texts[i + 1 :])
    if len(statements) > 1:
        for i, (_, tree) in enumerate(statements):
            name = "drop_index" if isinstance(tree, exp.Create) and tree.kind == "INDEX" else "drop_statement"
            add(name, f"{name}: {_neutral(tree, s.params)[:KEY_CHARS]}", texts[:i] + texts[i + 1 :])
    return out


def roundtrip(s: Spec) -> str:
    """The reference with every statement re-rendered by sqlglot: must grade like the reference, or mutants mean nothing."""
    return "\n".join(render(tree) for _, tree in parse(BY_NAME[s.family].migration(s.params)))
