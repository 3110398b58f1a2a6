"""A small synthetic, seeded log for the log_search tests (independent of any environment)."""

from __future__ import annotations

import random
from pathlib import Path

from log_search.store import LEVELS, Row, build_store

START_MS = 1_709_647_200_000  # 2024-03-05T14:00:00Z
END_MS = START_MS + 60 * 60_000
START, END = "2024-03-05T14:00:00Z", "2024-03-05T15:00:00Z"
SERVICES = ("gateway", "payments", "orders-db")
WORDS = ("timeout", "acquiring", "connection", "pool", "handled", "request", "slow", "query", "retrying")


def synthetic_rows(seed: int = 7, count: int = 3000) -> list[Row]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        ts = START_MS + rng.randrange(END_MS - START_MS)
        message = " ".join(rng.sample(WORDS, 3)) + f" id={i}"
        rows.append((ts, rng.choice(LEVELS), rng.choice(SERVICES), "pod-1", f"{i:016x}", message))
    return sorted(rows)


def synthetic_store(directory: Path, rows: list[Row] | None = None) -> Path:
    path = directory / "synthetic.sqlite"
    build_store(path, synthetic_rows() if rows is None else rows, {"origin": "synthetic"})
    return path
