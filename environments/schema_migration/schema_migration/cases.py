"""The rules as value classes: per family, each stated rule and the classes of values it names or excludes, and the held-out generator that puts every class in every held-out database.

A `ValueClass` is a predicate over source rows (`member`) and a maker of rows in it (`make`). The
held-out rows of a task are `CLASS_ROWS` made rows per class (cycling through positions: before,
after, both sides, first or last part) plus the family's own hard rows; the grader checks every
class on its own (`members`), so a rule broken on one class caps the score however few rows it has.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schema_migration.schema import Row

if TYPE_CHECKING:
    from schema_migration.families.base import Family, Params

__all__ = [
    "CLASS_ROWS", "KEPT_SPACES", "Fresh", "Rule", "ValueClass", "around", "heldout", "members", "space_classes",
]  # fmt: skip

CLASS_ROWS = 6
"""Rows (or groups of rows) each class adds to a held-out database: every position a class names
(before, after, both; the first or the last part) occurs at least twice."""

KEPT_SPACES = ("\t", "\n", "\r", "\r\n", "\u00a0", "\u2003", "\u3000", "\u2009", "\u202f", "\x0b", "\x0c")
"""Whitespace that is not U+0020: a rule that trims "spaces (U+0020 only)" keeps every one of these."""

Fresh = Callable[[str], int]
"""The next unused id for a row of the named table."""


@dataclass(frozen=True)
class ValueClass:
    name: str
    table: str
    """The source table whose rows are in the class."""
    make: Callable[[random.Random, int, Fresh], dict[str, list[Row]]] | None
    """Rows of the class (the k-th of `CLASS_ROWS`), with ids from `Fresh`; may add rows to other tables."""
    member: Callable[[Row, Any], bool]
    """Whether a row of `table` is in the class, given the family's `context` of the whole database."""
    override: Callable[[int, Row], Row | None] | None = None
    """Instead of `make`: the k-th of `CLASS_ROWS` rows of `table` the family generated, changed into the class (None: left)."""


@dataclass(frozen=True)
class Rule:
    text: str
    """The rule, in the prompt's words (shortened)."""
    classes: tuple[ValueClass, ...]


def around(value: str, pad: str, k: int) -> str:
    """`value` with `pad` before it (k % 3 == 0), after it (1) or on both sides (2)."""
    where = k % 3
    return (pad if where != 1 else "") + value + (pad if where != 0 else "")


def _edge(text: object, chars: str) -> bool:
    """Whether `text`, with U+0020 removed at both ends, starts or ends with one of `chars`."""
    if not isinstance(text, str):
        return False
    core = text.strip(" ")
    return bool(core) and (core[0] in chars or core[-1] in chars)


def space_classes(
    table: str,
    what: str,
    get: Callable[[Row], Iterable[object]],
    make: Callable[[random.Random, int, Fresh, str], dict[str, list[Row]]],
    core: Callable[[random.Random], str],
    inner: bool = True,
) -> tuple[ValueClass, ...]:
    """The classes of a rule "remove leading and trailing spaces (U+0020 only)" on `what`: U+0020 at
    the edges (removed), every other whitespace at the edges (kept, also under outer U+0020), only
    U+0020 (blank), only other whitespace (not blank), inner runs of spaces (kept); `make(rng, k,
    fresh, text)` builds the rows holding `text` in that column (or one of those columns: `get` gives
    the values a row holds there), `core(rng)` a plain value."""

    def cls(name: str, text: Callable[[random.Random, int], str], member: Callable[[object], bool]) -> ValueClass:
        return ValueClass(
            f"{what}: {name}",
            table,
            lambda rng, k, fresh: make(rng, k, fresh, text(rng, k)),
            lambda row, _ctx: any(member(v) for v in get(row)),
        )

    def kept(chars: str) -> Callable[[random.Random, int], str]:
        def text(rng: random.Random, k: int) -> str:
            pad = chars[k % len(chars)] if len(chars) > 1 else chars
            value = around(core(rng), pad, k)
            return " " + value + " " if k >= 3 else value  # outer U+0020 around the kept space, half the time

        return text

    tabs, lines, nbsp, unicode = "\t", "\n\r", "\u00a0", "\u2003\u3000\u2009\u202f\x0b\x0c"
    classes = [
        cls("U+0020 before, after or both (removed)", lambda rng, k: around(core(rng), " " * (1 + k % 2), k),
            lambda v: isinstance(v, str) and v != v.strip(" ") and v.strip(" ") != ""),
        cls("a tab at an edge (kept)", kept(tabs), lambda v: _edge(v, tabs)),
        cls("a newline or carriage return at an edge (kept)", kept(lines), lambda v: _edge(v, lines)),
        cls("a no-break space U+00A0 at an edge (kept)", kept(nbsp), lambda v: _edge(v, nbsp)),
        cls("another Unicode space at an edge (kept)", kept(unicode), lambda v: _edge(v, unicode)),
        cls("only U+0020 (blank)", lambda rng, k: " " * (1 + k % 3), lambda v: isinstance(v, str) and v != "" and v.strip(" ") == ""),
        cls("only other whitespace (not blank)", lambda rng, k: around(KEPT_SPACES[k % len(KEPT_SPACES)], " ", k) if k % 2 else KEPT_SPACES[k],
            lambda v: isinstance(v, str) and v.strip(" ") != "" and v.strip() == ""),
    ]  # fmt: skip
    if inner:
        classes.append(
            cls("inner runs of U+0020 (kept)", lambda rng, k: core(rng) + " " * (2 + k % 2) + core(rng),
                lambda v: isinstance(v, str) and "  " in v.strip(" "))
        )  # fmt: skip
    return tuple(classes)


class _Ids:
    """Ids for class rows: distinct, spread over the same range as the family's own ids."""

    def __init__(self, rng: random.Random, n: int) -> None:
        self.rng = rng
        self.span = 12 * n + 1000
        self.taken: set[int] = set()

    def __call__(self, table: str) -> int:
        while True:
            i = 10_000 + int(self.rng.random() * self.span)
            if i not in self.taken:
                self.taken.add(i)
                return i


def heldout(family: Family, p: Params, rng: random.Random, n: int) -> dict[str, list[Row]]:
    """The held-out rows: every class's rows, then the family's hard rows filling the main table to `n`
    (at least a quarter of `n` of them), every table sorted by id."""
    fresh = _Ids(rng, n)
    made: dict[str, list[Row]] = {}
    rules = family.rules_table(p)
    for rule in rules:
        for cls in rule.classes:
            for k in range(CLASS_ROWS if cls.make else 0):
                for table, rows in cls.make(rng, k, fresh).items():  # type: ignore[misc]
                    made.setdefault(table, []).extend(rows)
    main = family.main_table(p)
    base = family.sample(p, rng, max(n - len(made.get(main, [])), n // 4), True, frozenset(fresh.taken))
    overrides = [cls for rule in rules for cls in rule.classes if cls.override]
    for c, cls in enumerate(overrides):
        rows = base[cls.table]
        step = max(1, len(rows) // CLASS_ROWS)
        for k in range(min(CLASS_ROWS, len(rows))):
            at = (c * 7 + k * step) % len(rows)
            rows[at] = cls.override(k, rows[at]) or rows[at]  # type: ignore[misc]
    for table, rows in made.items():
        base.setdefault(table, []).extend(rows)
    return {table: sorted(rows, key=lambda r: r[0]) for table, rows in base.items()}


def members(family: Family, p: Params, rows: Mapping[str, list[Row]]) -> dict[str, tuple[str, list[Any]]]:
    """For each class (by name): its table and the keys of the rows of `rows` in it."""
    context = family.context(p, rows)
    out: dict[str, tuple[str, list[Any]]] = {}
    for rule in family.rules_table(p):
        for cls in rule.classes:
            keys = [row[0] for row in rows.get(cls.table, []) if cls.member(row, context)]
            out[cls.name] = (cls.table, keys)
    return out


def class_names(rules: Iterable[Rule]) -> list[str]:
    return [cls.name for rule in rules for cls in rule.classes]


def variants(
    name: str,
    table: str,
    texts: tuple[str, ...],
    row: Callable[[random.Random, Fresh, str], list[Row]],
    member: Callable[[Row, Any], bool],
    words: Callable[[random.Random], dict[str, str]],
) -> ValueClass:
    """A class whose k-th rows hold `texts[k % len(texts)]`, its {placeholders} filled from `words(rng)`."""

    def make(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
        return {table: row(rng, fresh, texts[k % len(texts)].format(**words(rng)))}

    return ValueClass(name, table, make, member)


def _odd(numeric: bool, notnull: bool) -> tuple[Callable[[int], object], ...]:
    """Values a column the rules leave alone must keep exactly: each a function of the row's id."""
    text: tuple[Callable[[int], object], ...] = (
        lambda i: "",
        lambda i: f"MiXeD Case {i}",
        lambda i: "2024-01-01 10:00:00",
        lambda i: f" padded {i}\t",
        lambda i: f"Émile ÆRØ  {i}",
    )
    if numeric:
        text = (lambda i: "", lambda i: "n/a", lambda i: f"MiXeD {i}", lambda i: "2024-01-01 10:00:00", lambda i: 12.5)
    return text if notnull else (lambda i: None, *text)


def kept_classes(family: Family, p: Params) -> tuple[ValueClass, ...]:
    """For each column the rules leave unchanged (`Family.kept`): a class of rows holding NULL, '',
    capitals, padding, a timestamp, and in a number column text, each to be kept exactly."""
    source = family.schemas(p)[0]
    out = []
    for table, columns in family.kept(p).items():
        t = source.table(table)
        for name in columns:
            col = t.column(name)
            at = t.column_names.index(name)
            odd = _odd(col.type != "TEXT", col.notnull)
            what = (
                ("NULL, " if not col.notnull else "")
                + "'', capitals, padding, a timestamp"
                + (", text in a number column" if col.type != "TEXT" else "")
            )

            def override(k: int, row: Row, at: int = at, odd: tuple[Callable[[int], object], ...] = odd) -> Row | None:
                return (
                    row[:at] + (odd[k](row[0]),) + row[at + 1 :] if k < len(odd) else None
                )  # each once: UNIQUE columns stay unique

            def member(row: Row, _ctx: Any, at: int = at, odd: tuple[Callable[[int], object], ...] = odd) -> bool:
                return any(row[at] == f(row[0]) and type(row[at]) is type(f(row[0])) for f in odd)

            out.append(ValueClass(f"{table}.{name} kept exactly ({what})", table, None, member, override))
    return tuple(out)
