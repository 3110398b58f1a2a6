"""Pure, seeded task generator: schema, visible rows, prompt, and the held-out rows the grader uses.

Every draw comes from a `random.Random` stream derived from an int and a label. The spec and the
visible rows come from the task's public seed ("params", "visible"); the held-out rows and the extra
held-out databases come from a `key` the caller passes ("heldout", "world:<name>"): the host's
secret for the task (`heldout.key`), so a recovered seed regenerates nothing held out. Both are
rebuilt on demand: the held-out rows never need to be stored, shipped to the container, or put in
task data.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Literal

from schema_migration import fillers
from schema_migration.families import FAMILIES, Family, Params
from schema_migration.families.base import WORLD_ROWS
from schema_migration.schema import Row, Schema

__all__ = [
    "HELDOUT_ROWS",
    "SPLITS",
    "VISIBLE_ROWS",
    "Spec",
    "Split",
    "expected_rows",
    "family_of",
    "heldout_rows",
    "seeds",
    "spec",
    "untouched",
    "visible_rows",
    "world_rows",
]

Split = Literal["train", "dev", "test"]
SPLITS: dict[str, range] = {
    "train": range(0, 1_000_000),
    "dev": range(1_000_000, 1_100_000),
    "test": range(2_000_000, 2_100_000),
}
VISIBLE_ROWS = 30
HELDOUT_ROWS = 2000


def stream(seed: int, label: str) -> random.Random:
    digest = hashlib.sha256(f"{label}:{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def family_of(seed: int) -> Family:
    return FAMILIES[seed % len(FAMILIES)]


@dataclass(frozen=True)
class Spec:
    """Everything about a task except its rows."""

    seed: int
    family: str
    params: Params
    source: Schema
    """The whole database before the migration (touched tables first)."""
    target: Schema
    """The whole database after the migration."""
    touched: tuple[str, ...]
    """Source tables the family touches; the others are fillers that must not change."""
    fillers: tuple[str, ...]


def spec(seed: int) -> Spec:
    family = family_of(seed)
    rng = stream(seed, "params")
    params = family.draw(rng)
    source, target = family.schemas(params)
    filler_schema, names = fillers.choose(rng, len(source.tables))
    return Spec(
        seed=seed,
        family=family.name,
        params=params,
        source=source.merged(filler_schema),
        target=target.merged(filler_schema),
        touched=tuple(t.name for t in source.tables),
        fillers=names,
    )


def _rows(s: Spec, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
    family = family_of(s.seed)
    out = family.rows(s.params, rng, n, hard)
    out.update(fillers.rows(rng, s.fillers, n, hard))
    return out


def visible_rows(s: Spec, n: int = VISIBLE_ROWS) -> dict[str, list[Row]]:
    """The sample that goes into the agent's container."""
    return _rows(s, stream(s.seed, "visible"), n, hard=False)


def heldout_rows(s: Spec, n: int = HELDOUT_ROWS, *, key: int) -> dict[str, list[Row]]:
    """The grader's rows, drawn from `key` (`heldout.key`, never the public seed): `n` rows in the
    main touched table, other ids, more awkward values."""
    return _rows(s, stream(key, "heldout"), n, hard=True)


def world_rows(s: Spec, *, key: int) -> list[tuple[str, dict[str, list[Row]]]]:
    """The family's extra held-out databases (whole-database classes, e.g. one without orphans), each
    (name, rows) from its own stream of `key`: graded beside the main held-out rows."""
    out = []
    for world in family_of(s.seed).worlds(s.params):
        rng = stream(key, f"world:{world.name}")
        rows = world.rows(s.params, rng, WORLD_ROWS)
        rows.update(fillers.rows(rng, s.fillers, WORLD_ROWS, True))
        out.append((world.name, rows))
    return out


def expected_rows(s: Spec, rows: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """The reference result: target tables and family views after migrating `rows`."""
    out = family_of(s.seed).transform(s.params, rows)
    out.update({name: rows[name] for name in s.fillers})
    return out


def untouched(s: Spec) -> Schema:
    """The objects the family does not touch (filler tables, their indexes, views and triggers):
    the migration must leave each exactly as it was."""
    own = family_of(s.seed).schemas(s.params)[0]
    mine = (
        {t.name for t in own.tables}
        | {i.name for i in own.indexes}
        | {v.name for v in own.views}
        | {t.name for t in own.triggers}
    )
    return Schema(
        tuple(t for t in s.source.tables if t.name not in mine),
        tuple(i for i in s.source.indexes if i.name not in mine),
        tuple(v for v in s.source.views if v.name not in mine),
        tuple(t for t in s.source.triggers if t.name not in mine),
    )


def seeds(split: Split, count: int) -> range:
    r = SPLITS[split]
    return r[: min(count, len(r))]
