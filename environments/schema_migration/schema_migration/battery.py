"""The later-write battery: INSERT / UPDATE / DELETE statements run after the migration, on the candidate's database and the reference's, whose outcomes must agree.

Generated from the target schema (every column of every touched table: its type, NOT NULL, UNIQUE,
index, foreign key) and the family's own values (`Family.write_values`: each bound a CHECK compares
against), over one world's reference rows. Each scenario is a short sequence of steps run in a
savepoint and undone; the child records what each step returns (lookups compare collations), and
after each step reads, for every touched table and view, how its row count changed and the rows at
the scenario's keys. Labels name the grader's own values, never a
held-out one ("a copy of another row's value").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schema_migration.families import BY_NAME
from schema_migration.generate import Spec
from schema_migration.schema import Row, Table, quote

__all__ = ["GENERIC", "Battery", "Scenario", "Step", "battery"]

GENERIC: tuple[object, ...] = (
    None, "", " ", "Ab", " Ab ", "\tAb", "12abc", "7", 0, 1, -1, 0.5, 2.5, 1.004, 2**63 - 1, -(2**63), 1e20, b"\x00\x01",
)  # fmt: skip
"""Values every column is written with: NULL and blanks, text that looks like a number, numbers at
type boundaries, a blob."""
FRESH_GAP = 1_000_000
"""New rows get ids above the largest id by this much, so no migration's row is touched by accident."""


@dataclass(frozen=True)
class Step:
    sql: str
    params: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Scenario:
    group: str
    """The requirement it tests (one schema check per group), e.g. "later writes to t.c"."""
    label: str
    steps: tuple[Step, ...]
    keys: tuple[Any, ...]
    """Keys whose rows are read back after each step, in every object."""


@dataclass(frozen=True)
class Battery:
    objects: tuple[dict[str, Any], ...]
    """Touched target tables and views read after each step: name, kind, columns, key."""
    scenarios: tuple[Scenario, ...]

    def request(self) -> dict[str, Any]:
        """Plain data for the confined child."""
        return {
            "objects": list(self.objects),
            "scenarios": [
                {"keys": list(s.keys), "steps": [[st.sql, list(st.params)] for st in s.steps]} for s in self.scenarios
            ],
        }


def _label(value: object) -> str:
    if isinstance(value, bytes):
        return "a blob"
    return "NULL" if value is None else repr(value)


class _Writer:
    def __init__(self, table: Table, rows: list[Row], fresh: int) -> None:
        self.table, self.rows, self.fresh = table, rows, fresh
        self.names = table.column_names
        self.key = table.primary_key[0]

    def next_id(self) -> int:
        self.fresh += 1
        return self.fresh

    def insert(self, row: dict[str, object]) -> Step:
        cols = ", ".join(quote(c) for c in row)
        return Step(
            f"INSERT INTO {quote(self.table.name)} ({cols}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
        )

    def update(self, column: str, value: object, key: object) -> Step:
        return Step(
            f"UPDATE {quote(self.table.name)} SET {quote(column)} = ? WHERE {quote(self.key)} = ?", (value, key)
        )


def _template(table: Table, rows: list[Row], unique: set[str], k: int) -> dict[str, object]:
    """A valid new row: another row's values (NOT NULL columns filled), unique columns made fresh."""
    full = [r for r in rows if all(v is not None or not c.notnull for v, c in zip(r, table.columns))] or rows
    base: dict[str, object] = (
        dict(zip(table.column_names, full[len(full) // 3])) if full else dict.fromkeys(table.column_names)
    )
    for c in table.columns:
        if c.name in unique:
            base[c.name] = f"battery-{k}@example.com" if c.type == "TEXT" else 9_000_000_000 + k
    return base


def battery(s: Spec, expected: Mapping[str, list[Row]]) -> Battery:
    """The battery for task `s` over one world's reference rows `expected`."""
    family = BY_NAME[s.family]
    target = family.schemas(s.params)[1]
    extra = family.write_values(s.params)
    objects = [
        {"name": t.name, "kind": "table", "columns": list(t.column_names), "key": t.primary_key[0]}
        for t in target.tables
    ]
    objects += [
        {"name": v.name, "kind": "view", "columns": list(v.columns), "key": v.key or v.columns[0]} for v in target.views
    ]
    top = max((r[0] for rows in expected.values() for r in rows if isinstance(r[0], int)), default=0)
    fresh = top + FRESH_GAP
    scenarios: list[Scenario] = []
    for table in target.tables:
        rows = sorted(expected.get(table.name, []), key=lambda r: r[0])
        unique = {c.name for c in table.columns if c.unique} | {
            i.columns[0] for i in target.indexes_of(table.name) if i.unique and len(i.columns) == 1
        }
        indexed = {i.columns[0] for i in target.indexes_of(table.name) if len(i.columns) == 1}
        w = _Writer(table, rows, fresh)
        for col in table.columns:
            if col.primary_key:
                continue
            group = f"later writes to {table.name}.{col.name} behave as the target's"
            values = list(GENERIC) + list(extra.get(f"{table.name}.{col.name}", ()))
            if col.references:
                parents = [r[0] for r in expected.get(col.references[0], [])]
                values += [p for p in parents[:1] + parents[-1:]] + [(max(parents, default=0)) + FRESH_GAP * 7]
            constrained = col.notnull or col.unique or col.check or col.references or col.name in unique
            for v in values:
                i = w.next_id()
                scenarios.append(
                    Scenario(
                        group,
                        f"INSERT with {col.name} = {_label(v)}",
                        (w.insert(_template(table, rows, unique, i) | {w.key: i, col.name: v}),),
                        (i,),
                    )
                )
                if constrained:
                    j = w.next_id()
                    steps = (w.insert(_template(table, rows, unique, j) | {w.key: j}), w.update(col.name, v, j))
                    scenarios.append(Scenario(group, f"UPDATE of a new row to {col.name} = {_label(v)}", steps, (j,)))
            if col.name in unique | indexed and rows:
                scenarios += _duplicates(w, table, rows, col.name, group, unique)
            if col.type == "TEXT":
                scenarios.append(_lookups(w, table, rows, col.name, unique))
        scenarios += _parent_side(w, table, target.tables, expected)
        fresh = w.fresh
    return Battery(tuple(objects), tuple(scenarios))


def _duplicates(w: _Writer, table: Table, rows: list[Row], column: str, group: str, unique: set[str]) -> list[Scenario]:
    """A copy of another row's value, that copy in other capitals or padded, and one new value twice."""
    at = table.column_names.index(column)
    present = [r[at] for r in rows if r[at] is not None]
    out: list[Scenario] = []
    if present:
        value = present[len(present) // 2]
        variants: list[tuple[str, object]] = [("a copy of another row's value", value)]
        if isinstance(value, str):
            variants += [("another row's value in capitals", value.upper()), ("another row's value in lower case", value.lower()),
                         ("another row's value padded with U+0020", f" {value} ")]  # fmt: skip
        for what, v in variants:
            i = w.next_id()
            out.append(
                Scenario(
                    group,
                    f"INSERT with {column} = {what}",
                    (w.insert(_template(table, rows, unique, i) | {w.key: i, column: v}),),
                    (i,),
                )
            )
    i, j = w.next_id(), w.next_id()
    new: object = f"battery-twin-{i}" if table.column(column).type == "TEXT" else 8_000_000_000 + i
    steps = tuple(w.insert(_template(table, rows, unique, k) | {w.key: k, column: new}) for k in (i, j))
    out.append(Scenario(group, f"two new rows with the same {column}", steps, (i, j)))
    return out


def _lookups(w: _Writer, table: Table, rows: list[Row], column: str, unique: set[str]) -> Scenario:
    """A new row with a mixed-case value, then lookups of it in other capitals, with a trailing space,
    and by range: they tell a NOCASE or RTRIM collation (on the column or its index) from BINARY."""
    i = w.next_id()
    value = f"Ab-{i}"
    name, col = quote(table.name), quote(column)
    reads = [
        Step(f"SELECT count(*) FROM {name} WHERE {col} = ?", (v,))
        for v in (value, value.upper(), value.lower(), value + " ")
    ]
    reads.append(Step(f"SELECT count(*) FROM {name} WHERE {col} >= ? AND {col} < ?", ("a", "b")))
    steps = (w.insert(_template(table, rows, unique, i) | {w.key: i, column: value}), *reads)
    return Scenario(
        f"later lookups of {table.name}.{column} compare as the target's (BINARY)",
        f"lookups of {column} in other capitals, padded or by range",
        steps,
        (i,),
    )


def _parent_side(
    w: _Writer, table: Table, tables: tuple[Table, ...], expected: Mapping[str, list[Row]]
) -> list[Scenario]:
    """For each foreign key pointing at `table`: delete, and change the id of, a referenced row and an unreferenced one."""
    out: list[Scenario] = []
    for child in tables:
        for col in child.columns:
            if not col.references or col.references[0] != table.name:
                continue
            at = child.column_names.index(col.name)
            used = {r[at] for r in expected.get(child.name, []) if r[at] is not None}
            ids = [r[0] for r in sorted(expected.get(table.name, []), key=lambda r: r[0])]
            referenced = [i for i in ids if i in used]
            free = [i for i in ids if i not in used]
            group = (
                f"deletes and id changes in {table.name} behave as the target's (foreign key {child.name}.{col.name})"
            )
            for what, key in (
                ("a referenced row", referenced[len(referenced) // 2] if referenced else None),
                ("an unreferenced row", free[0] if free else None),
            ):
                if key is None:
                    continue
                new = w.next_id()
                delete = Step(f"DELETE FROM {quote(table.name)} WHERE {quote(w.key)} = ?", (key,))
                out.append(Scenario(group, f"DELETE of {what} of {table.name}", (delete,), (key,)))
                out.append(
                    Scenario(
                        group, f"UPDATE of the id of {what} of {table.name}", (w.update(w.key, new, key),), (key, new)
                    )
                )
    return out
