"""The grader's checks: the target schema against the schema facts the confined child read, and the
child's row comparisons summed.

Pure functions of trusted data (the target schema) and of plain facts the child reported (names,
affinities, flags, counts): no agent SQL is parsed or run in this process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from schema_migration.schema import Schema, Table

__all__ = ["MAIN_SHARE", "Check", "RowStats", "row_checks", "row_stats", "schema_checks"]

MAIN_SHARE = 0.5
"""An object holding at least this share of the largest object's reference rows is a main one
(the migrated bulk, where a wrong share is tolerated in the row factor); every other object
(untouched tables, lookups, placeholder parents) must match row for row."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool


@dataclass(frozen=True)
class RowStats:
    expected: int
    matched: int
    wrong: int
    lost: int
    extra: int
    columns: dict[str, int] = field(default_factory=dict)
    """"object.column" -> rows wrong in that column (names only: reasons never quote a value)."""
    errors: dict[str, str] = field(default_factory=dict)
    """object -> why it could not be read ("missing", a SQLite error)."""

    @property
    def bad(self) -> int:
        """Rows the migration got wrong: differing, lost, or extra."""
        return self.wrong + self.lost + self.extra


Key = tuple[str | None, ...]
"""Column names, lower-cased; None for an expression column of an index."""


def _lower(values: Iterable[object]) -> Key:
    return tuple(None if v is None else str(v).lower() for v in values)


def _key_sets(info: dict[str, Any]) -> tuple[set[Key], set[Key]]:
    """(column tuples a unique index or the primary key enforces, column tuples any index covers);
    expression and non-BINARY keys match no requirement, nor does a partial index unless it serves
    every `column = ?` lookup (its WHERE is `column IS NOT NULL`: see `jail_reads._serves_equality`)."""
    unique: set[Key] = set()
    indexed: set[Key] = set()
    pk = [c for c in sorted(info["columns"], key=lambda c: c["pk"]) if c["pk"]]
    if pk:
        unique.add(_lower(c["name"] for c in pk))
    for index in info["indexes"]:
        if index["partial"] or None in index["columns"] or any(k.upper() != "BINARY" for k in index["collations"]):
            continue
        cols = _lower(index["columns"])
        indexed.add(cols)
        if index["unique"]:
            unique.add(cols)
    return unique, indexed | unique


NO_ACTION = ("NO ACTION", "NO ACTION")
"""(on_update, on_delete) in `pragma_foreign_key_list` of a foreign key that states no action."""


def _table_checks(table: Table, info: dict[str, Any] | None, target: Schema) -> list[Check]:
    out = [Check(f"{table.name} is a table", info is not None)]
    if info is None:
        return out
    # hidden 1 is a virtual table's hidden column; 2 and 3 are generated columns, real columns here.
    columns = {c["name"].lower(): c for c in info["columns"] if c["hidden"] != 1}
    wanted = {c.name.lower() for c in table.columns}
    extra = sorted(set(columns) - wanted)
    out.append(
        Check(f"{table.name} has no other columns" + (f" (found {', '.join(extra[:3])})" if extra else ""), not extra)
    )
    for col in table.columns:
        got = columns.get(col.name.lower())
        out.append(Check(f"column {table.name}.{col.name} exists", got is not None))
        if got is None:
            continue
        out.append(Check(f"{table.name}.{col.name} has {col.type} affinity", got["affinity"] == col.type))
        if not col.primary_key:
            out.append(
                Check(
                    f"{table.name}.{col.name} is {'NOT NULL' if col.notnull else 'nullable'}",
                    got["notnull"] == col.notnull,
                )
            )
    pk = tuple(c["name"].lower() for c in sorted(info["columns"], key=lambda c: c["pk"]) if c["pk"])
    out.append(Check(f"{table.name} primary key ({', '.join(table.primary_key)})", pk == _lower(table.primary_key)))
    groups: dict[int, list[tuple[str, str, str | None]]] = {}
    actions: dict[int, tuple[str, str]] = {}
    for fid, src, parent, to, on_update, on_delete in info["fks"]:
        groups.setdefault(fid, []).append((src, parent, to))
        actions[fid] = (on_update, on_delete)
    fks = {
        fid: (tuple(s.lower() for s, _, _ in g), g[0][1].lower(), tuple((t or "id").lower() for _, _, t in g))
        for fid, g in groups.items()
    }  # fmt: skip
    expected_fks = {
        ((c.name.lower(),), c.references[0].lower(), (c.references[1].lower(),)) for c in table.columns if c.references
    }
    for fk in sorted(expected_fks):
        out.append(Check(f"{table.name}.{fk[0][0]} references {fk[1]}({fk[2][0]})", fk in fks.values()))
    # The target's foreign keys state no action: ON DELETE CASCADE or SET NULL would change what a later delete does.
    plain = all(a == NO_ACTION for a in actions.values())
    out.append(
        Check(
            f"{table.name} has no other foreign keys and no ON DELETE/ON UPDATE actions",
            set(fks.values()) <= expected_fks and plain,
        )
    )
    unique, indexed = _key_sets(info)
    for col in table.columns:
        if col.unique:
            out.append(Check(f"{table.name}.{col.name} is unique", (col.name.lower(),) in unique))
    for index in target.indexes_of(table.name):
        cols = _lower(index.columns)
        label = f"{'unique ' if index.unique else ''}index on {table.name}({', '.join(index.columns)})"
        out.append(Check(label, cols in (unique if index.unique else indexed)))
    return out


def _others(kind: str, listed: list[list[str]], count: int, wanted: set[str]) -> Check:
    """No objects of `kind` but the wanted ones; `listed` may be cut short, `count` is exact."""
    unexpected = sorted({name for name, _ in listed if name.lower() not in wanted})
    ok = not unexpected and count <= len(wanted)
    found = f" (found {count} in all" + (f": {', '.join(unexpected[:3])}" if unexpected else "") + ")"
    return Check(f"no other {kind}s" + ("" if ok else found), ok)


def schema_checks(facts: dict[str, Any], target: Schema, untouched: Schema = Schema(())) -> list[Check]:
    """One Check per stated requirement of the target schema, on the delivered file's facts;
    `untouched` objects must keep their stored SQL (and views their rows) exactly. Column order is
    not graded; CHECK behaviour is the battery's (`score.battery_checks`)."""
    tables = {name.lower(): info for name, info in facts.get("tables", {}).items()}
    views = {name.lower(): info for name, info in facts.get("views", {}).items()}
    triggers = {(name.lower(), table.lower()) for name, table in facts.get("triggers_listed", [])}
    unchanged = facts.get("unchanged", {})
    checks: list[Check] = []
    for table in target.tables:
        checks += _table_checks(table, tables.get(table.name.lower()), target)
    for view in target.views:
        info = views.get(view.name.lower())
        checks.append(Check(f"view {view.name} exists", info is not None))
        if info is not None:
            checks.append(
                Check(
                    f"view {view.name} has columns {', '.join(view.columns)}",
                    sorted(str(c).lower() for c in info["columns"]) == sorted(c.lower() for c in view.columns),
                )
            )
    for trigger in target.triggers:
        checks.append(
            Check(
                f"trigger {trigger.name} on {trigger.table} exists",
                (trigger.name.lower(), trigger.table.lower()) in triggers,
            )
        )
    for kind, group in (
        ("table", untouched.tables),
        ("index", untouched.indexes),
        ("view", untouched.views),
        ("trigger", untouched.triggers),
    ):
        for obj in group:
            checks.append(Check(f"untouched {kind} {obj.name} as it was", bool(unchanged.get(obj.name))))
            if kind == "view":
                checks.append(
                    Check(f"untouched view {obj.name} shows the same rows", bool(unchanged.get(obj.name + " rows")))
                )
    checks.append(
        _others(
            "table",
            facts.get("tables_listed", []),
            facts.get("table_count", 0),
            {t.name.lower() for t in target.tables},
        )
    )
    checks.append(
        _others(
            "trigger",
            facts.get("triggers_listed", []),
            facts.get("trigger_count", 0),
            {t.name.lower() for t in target.triggers},
        )
    )
    return checks


def _bad(r: dict[str, Any]) -> int:
    bad: int = r["wrong"] + r["lost"] + r["extra"]
    return bad


def row_checks(results: list[dict[str, Any]], untouched: set[str]) -> list[Check]:
    """Every untouched or small object must match row for row: one Check each (see `MAIN_SHARE`)."""
    largest = max((r["expected"] for r in results), default=0)
    strict = [r for r in results if r["name"] in untouched or r["expected"] < MAIN_SHARE * largest]
    return [
        Check(
            f"all rows of {r['name']} as expected" + (f" ({_bad(r)} of {r['expected']} not)" if _bad(r) else ""),
            _bad(r) == 0,
        )
        for r in strict
    ]


def row_stats(results: list[dict[str, Any]]) -> RowStats:
    """Sum the child's per-object comparisons."""
    columns: dict[str, int] = {}
    errors: dict[str, str] = {}
    for r in results:
        for col, n in r["columns"].items():
            columns[f"{r['name']}.{col}"] = n
        if r["error"]:
            errors[r["name"]] = r["error"]

    def total(key: str) -> int:
        return sum(int(r[key]) for r in results)

    return RowStats(total("expected"), total("matched"), total("wrong"), total("lost"), total("extra"), columns, errors)
