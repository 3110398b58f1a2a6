"""Datasets built to tell an equivalent mutant from the reference if anything could: fresh hard rows plus each family's edge values, crossed."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import cast

from schema_migration import fillers
from schema_migration.families import BY_NAME
from schema_migration.generate import Spec, stream

__all__ = ["ADVERSARIES", "adversary"]

Rows = dict[str, list[tuple[object, ...]]]
BASE_ROWS = 1000
FIRST_ID = 900_000
PADS = ("", " ", "  ")


def _base(s: Spec) -> Rows:
    rng = stream(s.seed, "adversary")
    rows = BY_NAME[s.family].rows(s.params, rng, BASE_ROWS, True)
    rows.update(fillers.rows(rng, s.fillers, BASE_ROWS, True))
    return {name: list(table) for name, table in rows.items()}


def _padded(cores: tuple[str, ...]) -> list[str | None]:
    return [None] + [a + core + b for core in cores for a, b in itertools.product(PADS, PADS)]


def _split_column(s: Spec) -> Rows:
    rows = _base(s)
    cores = (
        "",
        "Ann",
        "Ann Lee",
        "Lee, Ann",
        "Lee,Ann",
        ",Ann",
        "Lee,",
        ",",
        " , ",
        "Lee , Ann , Jr",
        "\tAnn",
        "Ann\u00a0",
    )
    table = rows[s.params["table"]]
    table += [(FIRST_ID + k, name, None, "2024-01-01 00:00:00") for k, name in enumerate(_padded(cores))]
    return rows


def _cents(s: Spec) -> Rows:
    rows = _base(s)
    sym = s.params["symbol"]
    amount = "1,234.50" if s.params["format"] == "us" else "1.234,50"
    cores = ("", sym, sym + sym, "x", "0", "-0", "12", amount, f"-{sym}{amount}", f"{sym}5", f"5{sym}", "n/a")
    table = rows[s.params["table"]]
    table += [(FIRST_ID + k, f"SKU-{FIRST_ID + k:07d}", text, 1) for k, text in enumerate(_padded(cores))]
    return rows


def _dedupe(s: Spec) -> Rows:
    rows = _base(s)
    cores = (
        "",
        "Ann@Example.com",
        "ann@example.com",
        "ANN@EXAMPLE.COM",
        "JOSÉ@example.com",
        "josé@example.com",
        "José@Example.com",
    )
    parent = rows[s.params["table"]]
    mails = _padded(cores)
    parent += [(FIRST_ID + k, mail, f"Edge {k}", "2024-01-01") for k, mail in enumerate(mails)]
    child = rows[s.params["child"]]
    child += [(FIRST_ID + k, FIRST_ID + k, "edge") for k in range(len(mails))]
    return rows


def _check_repair(s: Spec) -> Rows:
    from schema_migration.families.check_repair import QTY_EDGES, RATE_EDGES

    rows = _base(s)
    rates = [None, *RATE_EDGES, -0.0, 0, 1, 2, 100, 101, 0.5, 1.0 + 1e-12, 100.0 - 1e-12]
    table = rows[s.params["table"]]
    pairs = itertools.product(QTY_EDGES, rates)
    table += [(FIRST_ID + k, f"edge {k}", q, r, None) for k, (q, r) in enumerate(pairs)]
    return rows


def _extract_json(s: Spec) -> Rows:
    rows = _base(s)
    cores = ("", "0", "7", "42", "0042", "1909", "4 2", "\t7", "x1", "12:30", "1/2")
    texts = [t for t in _padded(cores) if t is not None]
    table = rows[s.params["table"]]
    for k, text in enumerate(texts):
        obj: dict[str, object] = {}
        for _, path, _ in s.params["fields"]:
            *parents, leaf = path[2:].split(".")
            node = obj
            for key in parents:
                child: dict[str, object] = {}
                node = cast(dict[str, object], node.setdefault(key, child))
            node[leaf] = text
        table.append((FIRST_ID + k, "2024-01-01 00:00:00", json.dumps(obj)))
    return rows


ADVERSARIES: dict[str, Callable[[Spec], Rows]] = {
    "split_column": _split_column,
    "change_type_cents": _cents,
    "unique_dedupe": _dedupe,
    "check_repair": _check_repair,
    "extract_json": _extract_json,
}


def adversary(s: Spec) -> Rows:
    """The adversarial dataset for `s`'s family: its edge rows if it has some, else a fresh set of its hard rows.

    Each builder starts from the family's own hard rows (a stream the grader never uses, so these are
    not the held-out rows) and appends rows crossing the values an equivalence argument leans on:
    spaces on either side or both, separators at either end, every rate bound, case pairs, NULL and ''.
    """
    return ADVERSARIES.get(s.family, _base)(s)
