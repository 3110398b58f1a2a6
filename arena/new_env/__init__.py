"""`arena new-env NAME`: write a runnable environment package on Arena's contract (docs/new-environment.md)."""

from __future__ import annotations

from pathlib import Path

from arena.new_env.names import Names, check_name, checkout_root
from arena.new_env.scaffold import render, write

__all__ = ["Names", "default_dir", "new_environment", "next_steps"]

ENVIRONMENTS_DIR = "environments"


def default_dir(names: Names, cwd: Path) -> Path:
    """`environments/<package>` when `cwd` has an `environments/` folder (a checkout), else `<package>`."""
    parent = cwd / ENVIRONMENTS_DIR
    return (parent if parent.is_dir() else cwd) / names.package


def new_environment(
    name: str, directory: Path | None = None, cwd: Path | None = None
) -> tuple[Names, Path, list[Path]]:
    """Check `name`, render the package and write it to `directory` (default: `default_dir`); returns
    the names, the folder and the files written.

    Raises:
        UsageError: a bad or clashing name, or an unusable directory; nothing is written.
    """
    here = cwd or Path.cwd()
    names = check_name(name, checkout_root(directory.parent if directory is not None else here))
    target = directory or default_dir(names, here)
    return names, target, write(target, render(names))


def next_steps(names: Names, folder: Path) -> list[str]:
    """The commands that take the written package to a probed environment (docs/new-environment.md).
    None writes a config: Arena's `vf-eval` configs serve every environment (`arena.eval_configs`)."""
    return [f"pip install -e {folder}", f"arena images build {names.env_id}", f"arena probe {names.env_id} --tasks 5"]
