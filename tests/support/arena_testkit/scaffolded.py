"""A package `arena new-env` wrote, made visible to this process as if installed: its folder on sys.path with a dist-info holding its entry point."""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arena.new_env import Names, new_environment


@contextmanager
def scaffolded(env_id: str, where: Path) -> Iterator[tuple[Names, Path]]:
    """Write `env_id`'s package under `where`, expose it (sys.path, entry points) for the block, then forget it."""
    names, folder, _written = new_environment(env_id, where / env_id.replace("-", "_"))
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    info = folder / f"{names.package}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {env_id}\nVersion: 0.1.0\n")
    points = project["project"]["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) for group, entries in points.items()
        )
    )
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield names, folder
    finally:
        sys.path.remove(str(folder))
        for module in [m for m in sys.modules if m == names.package or m.startswith(f"{names.package}.")]:
            del sys.modules[module]
        importlib.invalidate_caches()
