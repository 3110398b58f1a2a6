"""Mutation operators for what a careless agent changes (issue 38): each turns a rule into its plausible misreading, not a token into another.

Trimming all whitespace where the rules say U+0020, an index made UNIQUE, comparisons made
case-insensitive, values lower-cased or blanks turned to NULL (and back), a CHECK loosened by
rounding or casting or tightened by a type test, half of a condition dropped, a pattern anchored to
the first character or widened to a sign, signs dropped, dates normalised, NOT NULL added, inner
spaces collapsed, and (`guards`, on the statement list) a row inserted only when the data seems to
need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from schema_migration.mutants.operators import Operator, Variant

__all__ = ["CARELESS", "guards"]

WHITESPACE = "' ' || CHAR(9) || CHAR(10) || CHAR(13) || CHAR(160)"


def _ws() -> exp.Expression:
    return exp.maybe_parse(WHITESPACE, dialect="sqlite")


def _trim_whitespace(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.Trim) and node.args.get("expression") is None:
        new = node.copy()
        new.set("expression", _ws())
        return [new]
    return []


def _unique_index(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.Create) and node.kind == "INDEX" and not node.args.get("unique"):
        new = node.copy()
        new.set("unique", True)
        return [new]
    return []


def _nocase(node: exp.Expression) -> list[Variant]:
    """An index column or a TEXT column made case-insensitive."""
    if (
        isinstance(node, exp.Ordered)
        and isinstance(node.parent, exp.IndexParameters)
        and not isinstance(node.this, exp.Collate)
    ):
        new = node.copy()
        new.set("this", exp.Collate(this=node.this.copy(), expression=exp.var("NOCASE")))
        return [new]
    if (
        isinstance(node, exp.ColumnDef)
        and (kind := node.args.get("kind")) is not None
        and kind.this == exp.DataType.Type.TEXT
    ):
        column = node.copy()
        column.append("constraints", exp.ColumnConstraint(kind=exp.CollateColumnConstraint(this=exp.var("NOCASE"))))
        return [column]
    return []


def _projected(node: exp.Expression) -> bool:
    """A bare column whose value lands in a row: an INSERT ... SELECT or view column, or an UPDATE's new value."""
    if not isinstance(node, exp.Column):
        return False
    item = node.parent if isinstance(node.parent, exp.Alias) else node
    select = item.parent
    if (
        isinstance(select, exp.Select)
        and isinstance(select.parent, (exp.Insert, exp.Create))
        and any(e is item for e in select.expressions)
    ):
        return True
    parent = node.parent
    return isinstance(parent, exp.EQ) and isinstance(parent.parent, exp.Update) and parent.expression is node


def _wrap(make: Callable[[exp.Expression], exp.Expression]) -> Callable[[exp.Expression], list[Variant]]:
    return lambda node: [make(node.copy())] if _projected(node) else []


def _drop_conjunct(node: exp.Expression) -> list[Variant]:
    return [node.this.copy(), node.expression.copy()] if isinstance(node, exp.And) else []


def _typeof_check(node: exp.Expression) -> list[Variant]:
    """CHECK (e) -> CHECK (e AND typeof(column) = its declared type): too strict for values SQLite stores otherwise."""
    if not isinstance(node, exp.CheckColumnConstraint) or not isinstance(
        definition := node.parent.parent,  # type: ignore[union-attr]
        exp.ColumnDef,
    ):
        return []
    kind = definition.args.get("kind")
    if kind is None:
        return []
    typed = exp.EQ(
        this=exp.Anonymous(this="TYPEOF", expressions=[exp.column(definition.name)]),
        expression=exp.Literal.string(kind.sql(dialect="sqlite").lower()),
    )
    new = node.copy()
    new.set("this", exp.And(this=exp.Paren(this=node.this.copy()), expression=typed))
    return [new]


_ORDER = (exp.GT, exp.GTE, exp.LT, exp.LTE)


def _loosen_operand(make: Callable[[exp.Expression], exp.Expression]) -> Callable[[exp.Expression], list[Variant]]:
    """A column compared by <, <=, > or >= with a number, replaced by `make(column)`."""

    def variants(node: exp.Expression) -> list[Variant]:
        if (
            isinstance(node, exp.Column)
            and isinstance(node.parent, _ORDER)
            and isinstance(node.parent.expression, exp.Literal)
            and node is node.parent.this
        ):
            return [make(node.copy())]
        return []

    return variants


def _round_division(node: exp.Expression) -> list[Variant]:
    return [exp.Round(this=node.copy(), decimals=exp.Literal.number(2))] if isinstance(node, exp.Div) else []


def _anchor(node: exp.Expression) -> list[Variant]:
    """A GLOB pattern '*...*' made to test only the first (or last) character."""
    if (
        not isinstance(node, exp.Literal)
        or not node.is_string
        or not isinstance(node.parent, exp.Glob)
        or node is node.parent.this
    ):
        return []
    s = node.this
    out = {s[1:] if s.startswith("*") and len(s) > 1 else s, s[:-1] if s.endswith("*") and len(s) > 1 else s} - {s}
    return [exp.Literal.string(v) for v in sorted(out)]


def _widen_class(node: exp.Expression) -> list[Variant]:
    """A negated class [^...] of a GLOB pattern widened by a sign or a space: '+5', ' 5' pass as numbers."""
    if not isinstance(node, exp.Literal) or not node.is_string or not isinstance(node.parent, exp.Glob):
        return []
    m = re.search(r"\[\^([^\]]*)\]", node.this)
    if m is None:
        return []
    return [
        exp.Literal.string(node.this[: m.start(1)] + extra + node.this[m.start(1) :])
        for extra in ("+", " ")
        if extra not in m.group(1)
    ]


def _abs_value(node: exp.Expression) -> list[Variant]:
    return [exp.Abs(this=node.copy())] if isinstance(node, exp.Cast) and not isinstance(node.parent, exp.Abs) else []


def _through_real(node: exp.Expression) -> list[Variant]:
    """An integer read through REAL, exact only below 2**53: CAST(x AS INTEGER) ->
    CAST(ROUND(CAST(x AS REAL)) AS INTEGER) (cents assembled as text, extract_json's trimmed digits)."""
    if not isinstance(node, exp.Cast) or not node.to.is_type("int"):
        return []
    real = exp.Round(this=exp.Cast(this=node.this.copy(), to=exp.DataType.build("REAL")))
    return [exp.Cast(this=real, to=node.to.copy())]


def _add_not_null(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.ColumnDef):
        return []
    kinds = [c.args.get("kind") for c in node.args.get("constraints") or []]
    if any(isinstance(k, (exp.NotNullColumnConstraint, exp.PrimaryKeyColumnConstraint)) for k in kinds):
        return []
    new = node.copy()
    new.append("constraints", exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
    return [new]


def _collapse_spaces(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.Trim) and not isinstance(node.parent, exp.Replace):
        return [exp.Replace(this=node.copy(), expression=exp.Literal.string("  "), replacement=exp.Literal.string(" "))]
    return []


CARELESS: tuple[Operator, ...] = (
    Operator("trim_whitespace", "TRIM(x) -> TRIM(x, space, tab, LF, CR, NBSP)", _trim_whitespace),
    Operator("unique_index", "CREATE INDEX -> CREATE UNIQUE INDEX", _unique_index),
    Operator("nocase", "an index column or TEXT column made COLLATE NOCASE", _nocase),
    Operator("fold_case", "a column's value lower-cased: LOWER(c)", _wrap(lambda c: exp.Lower(this=c))),
    Operator(
        "blank_to_null",
        "a column's value with '' made NULL: NULLIF(c, '')",
        _wrap(lambda c: exp.Nullif(this=c, expression=exp.Literal.string(""))),
    ),
    Operator(
        "null_to_blank",
        "a column's NULL made '': COALESCE(c, '')",
        _wrap(lambda c: exp.Coalesce(this=c, expressions=[exp.Literal.string("")])),
    ),
    Operator(
        "date_fallback",
        "a column normalised as a date where it is one: COALESCE(DATE(c), c)",
        _wrap(lambda c: exp.Coalesce(this=exp.Anonymous(this="DATE", expressions=[c]), expressions=[c.copy()])),
    ),
    Operator("drop_conjunct", "A AND B -> A, -> B", _drop_conjunct),
    Operator("typeof_check", "CHECK (e) -> CHECK (e AND typeof(c) = the declared type)", _typeof_check),
    Operator(
        "round_operand",
        "a compared column rounded to cents: ROUND(c, 2) < n; a quotient rounded",
        lambda n: _loosen_operand(lambda c: exp.Round(this=c, decimals=exp.Literal.number(2)))(n) + _round_division(n),
    ),
    Operator(
        "cast_operand",
        "a compared column cast to REAL: CAST(c AS REAL) < n",
        _loosen_operand(lambda c: exp.Cast(this=c, to=exp.DataType.build("REAL"))),
    ),
    Operator("anchor_pattern", "a GLOB '*..*' anchored at the first or last character", _anchor),
    Operator("widen_class", "a GLOB class [^...] widened by '+' or ' '", _widen_class),
    Operator("abs_value", "CAST(x AS ...) -> ABS(CAST(x AS ...)): the sign dropped", _abs_value),
    Operator(
        "through_real",
        "CAST(x AS INTEGER) -> CAST(ROUND(CAST(x AS REAL)) AS INTEGER): exact only below 2**53",
        _through_real,
    ),
    Operator("add_not_null", "a nullable column made NOT NULL", _add_not_null),
    Operator("collapse_spaces", "TRIM(x) -> REPLACE(TRIM(x), '  ', ' '): inner spaces collapsed", _collapse_spaces),
)


def guards(trees: list[exp.Expression]) -> list[tuple[int, exp.Expression, exp.Expression]]:
    """Each INSERT ... VALUES made conditional on the data seeming to need it: for each later CASE over
    a table, INSERT ... SELECT ... WHERE EXISTS (a row of that table NOT meeting its first WHEN).
    Returns (statement index, new statement, the EXISTS condition)."""
    out: list[tuple[int, exp.Expression, exp.Expression]] = []
    for i, tree in enumerate(trees):
        values = tree.find(exp.Values) if isinstance(tree, exp.Insert) else None
        if values is None or len(values.expressions) != 1:
            continue
        row = values.expressions[0]
        for later in trees[i + 1 :]:
            for case in later.find_all(exp.Case):
                select = case.find_ancestor(exp.Select)
                source = select.args.get("from_") if select is not None else None
                if source is None or not isinstance(source.this, exp.Table) or not case.args.get("ifs"):
                    continue
                condition = case.args["ifs"][0].this
                exists = exp.Exists(
                    this=exp.select("1").from_(source.this.copy()).where(exp.Not(this=exp.Paren(this=condition.copy())))
                )
                guarded = exp.select(*[e.copy() for e in row.expressions]).where(exists)
                new = tree.copy()
                new.set("expression", guarded)
                out.append((i, new, exists))
                break
    return out
