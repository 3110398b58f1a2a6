"""The installed environments, discovered one way: the names of the `arena.policies` entry points.

An environment describes itself through that entry point (its verifiers id is the name, its
policies the value) and, for its image, through `images/<env-id>/Dockerfile`; the platform holds
no environment names of its own.
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["ENTRY_POINT_GROUP", "entry_points", "environment_ids"]

ENTRY_POINT_GROUP = "arena.policies"


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Every installed environment's policies entry point (not loaded: loading imports the package)."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def environment_ids() -> list[str]:
    """Verifiers ids of the installed environments, sorted."""
    return sorted({point.name for point in entry_points()})
