"""The installed environments, discovered one way: the names of the `arena.policies` entry points.

An environment describes itself through that entry point (its verifiers id is the name, its
policies the value) and, for its image, through `image/Dockerfile` shipped in the entry point's
top-level package; the platform holds no environment names of its own.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "IMAGE_DIR", "entry_points", "environment_ids", "image_dirs"]

ENTRY_POINT_GROUP = "arena.policies"
IMAGE_DIR = "image"
"""Folder of an environment's package holding its image's `Dockerfile` (package data)."""


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Every installed environment's policies entry point (not loaded: loading imports the package)."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def environment_ids() -> list[str]:
    """Verifiers ids of the installed environments, sorted."""
    return sorted({point.name for point in entry_points()})


def image_dirs() -> dict[str, Path]:
    """Environment id → the folder holding its image's Dockerfile, for installed environments that
    ship one. Found without importing the package (its taskset pulls in verifiers)."""
    found = {}
    for point in entry_points():
        spec = importlib.util.find_spec(point.module.split(".")[0])
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / IMAGE_DIR
            if (folder / "Dockerfile").is_file():
                found[point.name] = folder
                break
    return found
