"""What the grader knows before it sees a migration: per held-out database (world), its file, reference rows, later-write battery, and the reference migration's own cost and battery outcomes.

The reference migration is trusted SQL: it runs here, in process, through the same code the confined
child runs (`jail_child.run_world`), so its cost is measured the way a candidate's is. A `Prepared`
depends only on the task, its held-out rows and the key of its extra databases, so it is cached: the mutation sweep grades thousands
of migrations of one task against one.
"""

from __future__ import annotations

import hashlib
import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schema_migration import cases, dbfile, jail_child
from schema_migration.battery import Battery, battery
from schema_migration.budget import Cost, Limits
from schema_migration.families import BY_NAME
from schema_migration.generate import Spec, expected_rows, untouched, world_rows
from schema_migration.jail import RowPlan, prepare
from schema_migration.reference import write_expected
from schema_migration.schema import Row, Schema

__all__ = ["MAIN", "Prepared", "World", "prepared", "world_request"]

MAIN = "main"
CACHED = 16


class ReferenceFailed(RuntimeError):
    """The reference migration did not run cleanly on a held-out database: a bug in the family."""


@dataclass(frozen=True)
class World:
    name: str
    db: bytes
    """The held-out database file, before the migration."""
    plan: RowPlan
    plan_file: bytes
    """The reference rows' file the plan names (written into the child's scratch directory)."""
    battery: Battery
    outcomes: list[list[Any]]
    """The reference's battery outcomes: what the target accepts, refuses and leaves behind."""
    cost: Cost


@dataclass(frozen=True)
class Prepared:
    spec: Spec
    rows: Mapping[str, list[Row]]
    """The main held-out rows (reasons are redacted against them)."""
    worlds: tuple[World, ...]
    """The main held-out database first, then the family's extra ones."""
    classes: dict[str, tuple[str, list[Any]]]
    """Class name -> (source table, keys of its rows) in the main held-out database."""
    kept: Schema
    """The objects the migration must leave exactly as they are."""


def _wanted(s: Spec, kept: Schema) -> dict[str, list[str]]:
    names = [o.name for group in (kept.tables, kept.indexes, kept.views, kept.triggers) for o in group]
    return {"tables": [t.name for t in s.target.tables], "views": [v.name for v in s.target.views], "untouched": names}


def world_request(s: Spec, kept: Schema, w: World, index: int, budget: dict[str, float]) -> dict[str, Any]:
    """A world as the child reads it: file names in its scratch directory, names, battery, budget."""
    return {
        "name": w.name,
        "db": f"world{index}.sqlite",
        **_wanted(s, kept),
        "battery": w.battery.request(),
        "plan": w.plan.__dict__,
        "budget": budget,
    }


def _world(s: Spec, kept: Schema, name: str, rows: Mapping[str, list[Row]], limits: Limits) -> World:
    expected = expected_rows(s, dict(rows))
    db = dbfile.to_bytes(s.source, rows)
    checks = battery(s, expected)
    statements, refused = prepare(BY_NAME[s.family].migration(s.params))
    with tempfile.TemporaryDirectory(prefix="schema-migration-reference-") as scratch:
        plan = write_expected(Path(scratch) / "expected.sqlite", s.target, expected)
        plan_file = (Path(scratch) / plan.path).read_bytes()
        w = World(name, db, plan, plan_file, checks, [], Cost(0, 0, 0.0, 0.0, 0, 0))
        free = {"steps": jail_child.UNLIMITED, "read_steps": jail_child.UNLIMITED, "cpu_s": 1e9, "read_cpu_s": 1e9}
        request = world_request(s, kept, w, 0, free) | {"db": str(Path(scratch) / "world0.sqlite")}
        request["plan"] = {**plan.__dict__, "path": str(Path(scratch) / plan.path)}
        Path(request["db"]).write_bytes(db)
        report = jail_child.run_world(
            request, {"length_mb": limits.length_mb, "memory_mb": limits.memory_mb, "file_mb": 0}, statements
        )
    bad = [r["name"] for r in report.get("rows", []) if r["wrong"] or r["lost"] or r["extra"]]
    if refused or report["status"] != "ok" or bad or report["fk_violations"] or report["integrity"] != ["ok"]:
        raise ReferenceFailed(
            f"seed {s.seed} ({s.family}), {name}: {refused or report.get('error') or bad or report['integrity']}"
        )
    touched = max(len(rows.get(t, [])) for t in s.touched)
    cost = Cost(
        report["steps"], report["read_steps"], report["cpu_s"], report["read_cpu_s"], report["file_bytes"], touched
    )
    return World(name, db, plan, plan_file, checks, report["battery"], cost)


_CACHE: OrderedDict[tuple[int, str, int, Limits], Prepared] = OrderedDict()


def prepared(s: Spec, rows: Mapping[str, list[Row]], key: int, limits: Limits = Limits()) -> Prepared:
    """The grader's preparation for task `s` on the held-out `rows`, with the extra held-out
    databases drawn from `key` (`heldout.key`); cached by the rows' content and the key."""
    blob = pickle.dumps({k: list(v) for k, v in rows.items()}, protocol=pickle.HIGHEST_PROTOCOL)
    cache_key = (s.seed, hashlib.sha256(blob).hexdigest(), key, limits)
    if cache_key in _CACHE:
        _CACHE.move_to_end(cache_key)
        return _CACHE[cache_key]
    kept = untouched(s)
    extra = world_rows(s, key=key)
    worlds = [_world(s, kept, MAIN, rows, limits)] + [_world(s, kept, name, more, limits) for name, more in extra]
    done = Prepared(s, rows, tuple(worlds), cases.members(BY_NAME[s.family], s.params, rows), kept)
    _CACHE[cache_key] = done
    if len(_CACHE) > CACHED:
        _CACHE.popitem(last=False)
    return done
