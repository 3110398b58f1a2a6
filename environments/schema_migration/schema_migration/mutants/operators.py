"""Mutation operators: each turns one node of a parsed (sqlglot) statement into small wrong variants (the kit's `Operator` over sqlglot nodes)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import cast

from sqlglot import exp

from arena_kit.adversaries.mutation import operators as kit

__all__ = ["OPERATORS", "STATEMENT_OPERATORS", "Operator", "Variant", "apply", "edits"]

Variant = exp.Expression | None
"""A replacement for the node, or None to remove it."""
Operator = kit.Operator[exp.Expression]
"""An operator over sqlglot nodes (`arena_kit.adversaries.mutation.operators.Operator`)."""


def _copy_with(node: exp.Expression, **args: object) -> exp.Expression:
    new = node.copy()
    for key, value in args.items():
        new.set(key, value)
    return new


def _trim(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Trim) or node.args.get("expression") is not None:
        return []
    here = node.args.get("position")
    return [_copy_with(node, position=p) for p in (None, "LEADING", "TRAILING") if p != here]


_FLIP: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.LT: exp.LTE, exp.LTE: exp.LT, exp.GT: exp.GTE, exp.GTE: exp.GT, exp.EQ: exp.NEQ, exp.NEQ: exp.EQ,
}  # fmt: skip


def _comparison(node: exp.Expression) -> list[Variant]:
    flipped = _FLIP.get(type(node))
    if flipped is None:
        return []
    return [flipped(this=node.this.copy(), expression=node.expression.copy())]


def _integer(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Literal) or node.is_string or not re.fullmatch(r"\d+", node.this):
        return []
    n = int(node.this)
    out: list[Variant] = [exp.Literal.number(v) for v in (n - 1, n + 1) if v >= 0]
    return out + ([exp.Literal.number(-1)] if n == 0 else [])


def _real(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Literal) or node.is_string or re.fullmatch(r"\d+", node.this):
        return []
    x = float(node.this)
    out: list[Variant] = [exp.Literal.number(repr(v)) for v in (x - 1, x + 1)]
    return out + ([exp.Literal.number(repr(x / 10))] if x else [])


def _constraint(kind: type[exp.Expression]) -> Callable[[exp.Expression], list[Variant]]:
    def drop(node: exp.Expression) -> list[Variant]:
        if isinstance(node, exp.ColumnConstraint) and isinstance(node.args.get("kind"), kind):
            return [None]
        if isinstance(node, kind) and isinstance(node.parent, exp.Schema):  # a table constraint
            return [None]
        return []

    return drop


def _drop_unique(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.Create) and node.args.get("unique"):
        return [_copy_with(node, unique=False)]
    return _constraint(exp.UniqueColumnConstraint)(node)


def _drop_references(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.ColumnConstraint) and isinstance(node.args.get("kind"), exp.Reference):
        return [None]
    return [None] if isinstance(node, exp.ForeignKey) else []


def _on_delete(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Reference):
        return []
    options = [str(o) for o in node.args.get("options") or []]
    here = next((o for o in options if o.upper().startswith("ON DELETE")), None)
    rest = [o for o in options if o is not here]
    out: list[Variant] = []
    for action in ("ON DELETE CASCADE", "ON DELETE SET NULL", "ON DELETE RESTRICT", None):
        if action != here:
            out.append(_copy_with(node, options=rest + ([action] if action else []) or None))
    return out


def _drop(kind: type[exp.Expression]) -> Callable[[exp.Expression], list[Variant]]:
    return lambda node: [None] if isinstance(node, kind) else []


def _unwrap(kind: type[exp.Expression]) -> Callable[[exp.Expression], list[Variant]]:
    return lambda node: [node.this.copy()] if isinstance(node, kind) else []


_SWAP: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.Min: exp.Max, exp.Max: exp.Min, exp.Least: exp.Greatest, exp.Greatest: exp.Least,
    exp.Lower: exp.Upper, exp.Upper: exp.Lower,
}  # fmt: skip


def _swap_kind(kinds: tuple[type[exp.Expression], ...]) -> Callable[[exp.Expression], list[Variant]]:
    def swap(node: exp.Expression) -> list[Variant]:
        if type(node) not in kinds:
            return []
        return [
            _SWAP[type(node)](**{k: v.copy() if isinstance(v, exp.Expression) else v for k, v in node.args.items()})
        ]

    return swap


def _direction(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Ordered) or not isinstance(node.parent, (exp.Order, exp.IndexParameters)):
        return []
    desc = bool(node.args.get("desc"))
    return [_copy_with(node, desc=not desc, nulls_first=desc)]  # SQLite's default NULL placement for the new direction


def _string(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Literal) or not node.is_string or len(node.this) > 3:
        return []
    s = node.this
    out = {" " if s == "" else s[:-1], s + "x"} - {s}
    return [exp.Literal.string(v) for v in sorted(out)]


def _char_class(node: exp.Expression) -> list[Variant]:
    """Narrow each range of a bracket class in a GLOB/LIKE pattern by one at either end."""
    if not isinstance(node, exp.Literal) or not node.is_string:
        return []
    out: list[Variant] = []
    for m in re.finditer(r"(\w)-(\w)", node.this):
        lo, hi = m.group(1), m.group(2)
        if "[" not in node.this[: m.start()] or ord(hi) <= ord(lo):
            continue
        for narrowed in (f"{lo}-{chr(ord(hi) - 1)}", f"{chr(ord(lo) + 1)}-{hi}"):
            out.append(exp.Literal.string(node.this[: m.start()] + narrowed + node.this[m.end() :]))
    return out


def _separator(node: exp.Expression) -> list[Variant]:
    """A string that is a separator or replacement: an operand of ||, or an argument of replace()/instr()/group_concat()."""
    if not isinstance(node, exp.Literal) or not node.is_string:
        return []
    parent = node.parent
    if not isinstance(parent, (exp.DPipe, exp.Replace, exp.StrPosition, exp.GroupConcat)) or node is parent.this:
        return []
    s = node.this
    other = s.strip() if s.strip() != s else s + " "
    return [exp.Literal.string(other if other != s else "_")]


def _case_branches(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Case):
        return []
    ifs = node.args.get("ifs") or []
    results = [i.args["true"] for i in ifs] + ([node.args["default"]] if node.args.get("default") else [])
    out: list[Variant] = []
    for k in range(len(results) - 1):
        if results[k] == results[k + 1]:
            continue
        new = node.copy()
        branches = new.args["ifs"] + ([new.args["default"]] if new.args.get("default") else [])
        a, b = (
            (branches[k].args["true"], branches[k + 1].args["true"])
            if k + 1 < len(ifs)
            else (branches[k].args["true"], branches[k + 1])
        )
        a_copy, b_copy = a.copy(), b.copy()
        a.replace(b_copy)
        b.replace(a_copy)
        out.append(new)
    return out


def _join(node: exp.Expression) -> list[Variant]:
    if not isinstance(node, exp.Join):
        return []
    side = (node.args.get("side") or "").upper()
    return [_copy_with(node, side=s or None, kind=None) for s in ("", "LEFT") if s != side]


def _group_column(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.Group):
        keys = node.expressions
        return [None] if len(keys) == 1 else []
    return (
        [None]
        if isinstance(node.parent, exp.Group) and len(node.parent.expressions) > 1 and node in node.parent.expressions
        else []
    )


def _swap_columns(node: exp.Expression) -> list[Variant]:
    """Swap adjacent output columns of an INSERT ... SELECT (values land in the wrong column) or of a view."""
    if not isinstance(node, exp.Select) or not isinstance(node.parent, (exp.Insert, exp.Create)):
        return []
    cols = node.expressions
    out: list[Variant] = []
    for k in range(len(cols) - 1):
        if cols[k] == cols[k + 1]:
            continue
        new = node.copy()
        a, b = new.expressions[k], new.expressions[k + 1]
        a_copy, b_copy = a.copy(), b.copy()
        a.replace(b_copy)
        b.replace(a_copy)
        out.append(new)
    return out


def _and_or(node: exp.Expression) -> list[Variant]:
    if isinstance(node, exp.And):
        return [exp.Or(this=node.this.copy(), expression=node.expression.copy())]
    if isinstance(node, exp.Or):
        return [exp.And(this=node.this.copy(), expression=node.expression.copy())]
    return []


def _negation(node: exp.Expression) -> list[Variant]:
    return [node.this.copy()] if isinstance(node, exp.Not) else []


def _arithmetic(node: exp.Expression) -> list[Variant]:
    pairs: dict[type[exp.Expression], type[exp.Expression]] = {
        exp.Add: exp.Sub,
        exp.Sub: exp.Add,
        exp.Mul: exp.Div,
        exp.Div: exp.Mul,
    }
    other = pairs.get(type(node))
    return [other(this=node.this.copy(), expression=node.expression.copy())] if other else []


OPERATORS: tuple[Operator, ...] = (
    Operator("trim_side", "TRIM <-> LTRIM / RTRIM", _trim),
    Operator("comparison", "< <-> <=, > <-> >=, = <-> <>", _comparison),
    Operator("integer_pm1", "integer literal +/- 1", _integer),
    Operator("real_literal", "real literal +/- 1, / 10", _real),
    Operator("drop_not_null", "drop NOT NULL", _constraint(exp.NotNullColumnConstraint)),
    Operator("drop_unique", "drop UNIQUE (constraint or index)", _drop_unique),
    Operator("drop_primary_key", "drop PRIMARY KEY", _constraint(exp.PrimaryKeyColumnConstraint)),
    Operator("drop_check", "drop CHECK", _constraint(exp.CheckColumnConstraint)),
    Operator("drop_references", "drop REFERENCES / FOREIGN KEY", _drop_references),
    Operator("on_delete", "change the ON DELETE action", _on_delete),
    Operator("drop_where", "drop a WHERE", _drop(exp.Where)),
    Operator("unwrap_coalesce", "COALESCE(x, d) -> x", _unwrap(exp.Coalesce)),
    Operator("unwrap_nullif", "NULLIF(x, y) -> x", _unwrap(exp.Nullif)),
    Operator("min_max", "MIN <-> MAX", _swap_kind((exp.Min, exp.Max, exp.Least, exp.Greatest))),
    Operator("lower_upper", "LOWER <-> UPPER", _swap_kind((exp.Lower, exp.Upper))),
    Operator("asc_desc", "ASC <-> DESC", _direction),
    Operator("short_string", "string literal of <= 3 chars: drop last char, add one, '' -> ' '", _string),
    Operator("char_class", "narrow a [a-b] class in a pattern by one", _char_class),
    Operator("separator", "change a separator or replacement string", _separator),
    Operator("case_branches", "swap the results of two adjacent CASE branches", _case_branches),
    Operator("join_type", "INNER <-> LEFT JOIN", _join),
    Operator("drop_distinct", "drop DISTINCT", _drop(exp.Distinct)),
    Operator("drop_group_by", "drop a GROUP BY column (or the GROUP BY)", _group_column),
    Operator("drop_order_by", "drop an ORDER BY", _drop(exp.Order)),
    Operator("swap_columns", "swap two adjacent columns of an INSERT ... SELECT or a view", _swap_columns),
    Operator("and_or", "AND <-> OR", _and_or),
    Operator("drop_not", "drop a NOT", _negation),
    Operator("arithmetic", "+ <-> -, * <-> /", _arithmetic),
)

STATEMENT_OPERATORS = ("drop_statement", "drop_index")
"""Operators on the statement list: remove one statement (CREATE INDEX statements under drop_index)."""


def edits(tree: exp.Expression, operators: tuple[Operator, ...] = OPERATORS) -> Iterator[tuple[Operator, int, Variant]]:
    """Every single edit of `tree`: (operator, the node's position in `tree.walk()`, its replacement).

    An operator never edits SQL text: it is given a node of the syntax tree and returns replacement
    nodes (`None` removes the node). `apply` applies one replacement to a fresh copy of the tree, so
    every mutant differs from the reference by exactly one edit.
    """
    return kit.edits([cast(exp.Expression, node) for node in tree.walk()], operators)


def apply(tree: exp.Expression, k: int, variant: Variant) -> exp.Expression:
    """A copy of `tree` with its `k`-th node (in walk order) replaced by `variant` (removed if None)."""
    copy = tree.copy()
    target = list(copy.walk())[k]
    if target is copy:
        return variant.copy() if variant is not None else exp.Null()
    if variant is None:
        target.pop()
    else:
        target.replace(variant.copy())
    return copy
