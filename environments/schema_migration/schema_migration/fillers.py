"""Unrelated tables (with an index, sometimes a view or trigger) that fill out the database and must survive unchanged."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from schema_migration import values
from schema_migration.values import pick
from schema_migration.families.base import ids
from schema_migration.schema import Column, Index, Row, Schema, Table, Trigger, View

__all__ = ["FILLERS", "Filler", "choose", "rows"]

PK = Column("id", "INTEGER", primary_key=True)


@dataclass(frozen=True)
class Filler:
    table: Table
    make: Callable[[random.Random, list[int], dict[str, list[Row]]], list[Row]]
    """Rows for the given ids; may read rows of the fillers it depends on."""
    needs: tuple[str, ...] = ()
    indexes: tuple[Index, ...] = ()


def _warehouses(rng: random.Random, keys: list[int], _: dict[str, list[Row]]) -> list[Row]:
    return [(i, f"WH-{i:05d}", pick(rng, (None, *values.CITIES))) for i in keys]


def _suppliers(rng: random.Random, keys: list[int], _: dict[str, list[Row]]) -> list[Row]:
    return [
        (i, f"{values.word(rng).title()} {pick(rng, values.LAST)}", pick(rng, (None, *values.COUNTRIES)), pick(rng, (None, round(rng.uniform(0, 5), 1))))
        for i in keys
    ]  # fmt: skip


def _deliveries(rng: random.Random, keys: list[int], done: dict[str, list[Row]]) -> list[Row]:
    houses = [r[0] for r in done["warehouses"]]
    return [
        (i, pick(rng, houses) if rng.random() < 0.9 else None, pick(rng, (0.0, round(rng.uniform(0.1, 400), 2))), values.date(rng))
        for i in keys
    ]  # fmt: skip


def _audit(rng: random.Random, keys: list[int], _: dict[str, list[Row]]) -> list[Row]:
    return [
        (i, pick(rng, ("order", "user", "sku")), pick(rng, ("create", "update", "delete")), values.timestamp(rng))
        for i in keys
    ]


def _settings(rng: random.Random, keys: list[int], _: dict[str, list[Row]]) -> list[Row]:
    return [(f"{values.word(rng)}.{i}", pick(rng, (None, "", "on", "off", "Ünïcode ✓", str(i)))) for i in keys]


def _tags(rng: random.Random, keys: list[int], _: dict[str, list[Row]]) -> list[Row]:
    return [(i, f"{values.word(rng)}-{i}") for i in keys]


FILLERS: dict[str, Filler] = {
    "warehouses": Filler(
        Table("warehouses", (PK, Column("code", "TEXT", notnull=True, unique=True), Column("city", "TEXT"))),
        _warehouses,
    ),
    "suppliers": Filler(
        Table(
            "suppliers", (PK, Column("name", "TEXT", notnull=True), Column("country", "TEXT"), Column("rating", "REAL"))
        ),
        _suppliers,
        indexes=(Index("idx_suppliers_country", "suppliers", ("country",)),),
    ),
    "deliveries": Filler(
        Table(
            "deliveries",
            (
                PK,
                Column("warehouse_id", "INTEGER", references=("warehouses", "id")),
                Column("weight_kg", "REAL"),
                Column("shipped_on", "TEXT"),
            ),
        ),
        _deliveries,
        needs=("warehouses",),
        indexes=(Index("idx_deliveries_warehouse_id", "deliveries", ("warehouse_id",)),),
    ),
    "audit_log": Filler(
        Table(
            "audit_log",
            (PK, Column("entity", "TEXT", notnull=True), Column("action", "TEXT", notnull=True), Column("at", "TEXT")),
        ),
        _audit,
    ),
    "settings": Filler(
        Table("settings", (Column("key", "TEXT", primary_key=True), Column("value", "TEXT"))), _settings
    ),
    "tags": Filler(Table("tags", (PK, Column("label", "TEXT", notnull=True, unique=True))), _tags),
}
ORDER = tuple(FILLERS)


def choose(rng: random.Random, focus_tables: int) -> tuple[Schema, tuple[str, ...]]:
    """Pick filler tables (2-8 tables in all, with the focus ones) and their views/triggers."""
    k = rng.randint(1, min(5, 8 - focus_tables - 1))
    picked = set(rng.sample(ORDER, k))
    for name in list(picked):
        picked.update(FILLERS[name].needs)
    names = tuple(n for n in ORDER if n in picked)
    views: list[View] = []
    triggers: list[Trigger] = []
    if "deliveries" in picked and rng.random() < 0.5:
        views.append(
            View(
                "v_heavy_deliveries", ("id", "weight_kg"), "SELECT id, weight_kg FROM deliveries WHERE weight_kg > 100"
            )
        )
    if "suppliers" in picked and rng.random() < 0.5:
        views.append(View("v_top_suppliers", ("id", "name"), "SELECT id, name FROM suppliers WHERE rating >= 4"))
    if {"suppliers", "audit_log"} <= picked and rng.random() < 0.6:
        triggers.append(
            Trigger(
                "trg_suppliers_audit",
                "suppliers",
                "CREATE TRIGGER trg_suppliers_audit AFTER UPDATE ON suppliers BEGIN\n"
                "  INSERT INTO audit_log (entity, action, at) VALUES ('supplier', 'update', NULL);\nEND",
            )
        )
    schema = Schema(
        tuple(FILLERS[n].table for n in names),
        tuple(i for n in names for i in FILLERS[n].indexes),
        tuple(views),
        tuple(triggers),
    )
    return schema, names


def rows(rng: random.Random, names: tuple[str, ...], n: int, hard: bool) -> dict[str, list[Row]]:
    done: dict[str, list[Row]] = {}
    for name in names:
        count = max(10, n // 20) if hard else rng.randint(3, 8)
        done[name] = FILLERS[name].make(rng, ids(rng, count, 10_000 if hard else 1), done)
    return done
