"""The grader's checks: the target schema against the schema facts the confined child read, and the
child's row comparisons summed.

Pure functions of trusted data (the target schema) and of plain facts the child reported (names,
affinities, flags, counts): no agent SQL is parsed or run in this process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schema_migration.schema import Schema, Table

__all__ = ["Check", "RowStats", "row_stats", "schema_checks"]


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


def _lower(values: object) -> tuple[str | None, ...]:
    return tuple(None if v is None else str(v).lower() for v in values)  # type: ignore[union-attr]


def _key_sets(info: dict) -> tuple[set[tuple], set[tuple]]:
    """(column tuples a non-partial unique index or the primary key enforces, column tuples any
    non-partial index covers); expression and non-BINARY keys match no requirement."""
    unique: set[tuple] = set()
    indexed: set[tuple] = set()
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


def _table_checks(table: Table, info: dict | None, target: Schema) -> list[Check]:
    out = [Check(f"{table.name} is a table", info is not None)]
    if info is None:
        return out
    columns = {c["name"].lower(): c for c in info["columns"] if c["hidden"] == 0}
    wanted = {c.name.lower() for c in table.columns}
    extra = sorted(set(columns) - wanted)
    out.append(Check(f"{table.name} has no other columns" + (f" (found {', '.join(extra[:3])})" if extra else ""), not extra))
    for col in table.columns:
        got = columns.get(col.name.lower())
        out.append(Check(f"column {table.name}.{col.name} exists", got is not None))
        if got is None:
            continue
        out.append(Check(f"{table.name}.{col.name} has {col.type} affinity", got["affinity"] == col.type))
        if not col.primary_key:
            out.append(Check(f"{table.name}.{col.name} is {'NOT NULL' if col.notnull else 'nullable'}", got["notnull"] == col.notnull))
    pk = tuple(c["name"].lower() for c in sorted(info["columns"], key=lambda c: c["pk"]) if c["pk"])
    out.append(Check(f"{table.name} primary key ({', '.join(table.primary_key)})", pk == _lower(table.primary_key)))
    groups: dict[int, list] = {}
    for fid, src, parent, to in info["fks"]:
        groups.setdefault(fid, []).append((src, parent, to))
    fks = {
        (tuple(s.lower() for s, _, _ in g), g[0][1].lower(), tuple((t or "id").lower() for _, _, t in g))
        for g in groups.values()
    }  # fmt: skip
    expected_fks = {((c.name.lower(),), c.references[0].lower(), (c.references[1].lower(),)) for c in table.columns if c.references}
    for fk in sorted(expected_fks):
        out.append(Check(f"{table.name}.{fk[0][0]} references {fk[1]}({fk[2][0]})", fk in fks))
    out.append(Check(f"{table.name} has no other foreign keys", fks <= expected_fks))
    unique, indexed = _key_sets(info)
    for col in table.columns:
        if col.unique:
            out.append(Check(f"{table.name}.{col.name} is unique", (col.name.lower(),) in unique))
    for index in target.indexes_of(table.name):
        cols = _lower(index.columns)
        label = f"{'unique ' if index.unique else ''}index on {table.name}({', '.join(index.columns)})"
        out.append(Check(label, cols in (unique if index.unique else indexed)))
    return out


def schema_checks(facts: dict, target: Schema, probes: list[tuple[str, bool]]) -> list[Check]:
    """One Check per stated requirement of the target schema, on the delivered file's facts;
    `probes` are (description, passed) of the CHECK probes. Column order is not graded."""
    tables = {name.lower(): info for name, info in facts.get("tables", {}).items()}
    views = {name.lower(): info for name, info in facts.get("views", {}).items()}
    triggers = {(name.lower(), table.lower()) for name, table in facts.get("triggers", [])}
    checks: list[Check] = []
    for table in target.tables:
        checks += _table_checks(table, tables.get(table.name.lower()), target)
    for view in target.views:
        info = views.get(view.name.lower())
        checks.append(Check(f"view {view.name} exists", info is not None))
        if info is not None:
            checks.append(Check(f"view {view.name} has columns {', '.join(view.columns)}", sorted(_lower(info["columns"])) == sorted(_lower(view.columns))))  # type: ignore[type-var]
    for trigger in target.triggers:
        checks.append(Check(f"trigger {trigger.name} on {trigger.table} exists", (trigger.name.lower(), trigger.table.lower()) in triggers))
    unexpected = sorted(set(tables) - {t.name.lower() for t in target.tables})
    checks.append(Check("no other tables" + (f" (found {', '.join(unexpected[:3])})" if unexpected else ""), not unexpected))
    return checks + [Check(description, passed) for description, passed in probes]


def row_stats(results: list[dict]) -> RowStats:
    """Sum the child's per-object comparisons."""
    columns: dict[str, int] = {}
    errors: dict[str, str] = {}
    for r in results:
        for col, n in r["columns"].items():
            columns[f"{r['name']}.{col}"] = n
        if r["error"]:
            errors[r["name"]] = r["error"]
    total = lambda key: sum(r[key] for r in results)  # noqa: E731
    return RowStats(total("expected"), total("matched"), total("wrong"), total("lost"), total("extra"), columns, errors)
