"""The installed environments, discovered one way: their entry points, never an import by name.

An environment declares itself in the `arena.environments` group: its verifiers id is the name, its
value an `arena_kit.contract.Environment` (policies, adversaries, box, exports). Its image is
`image/Dockerfile` in the entry point's top-level package.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from pathlib import Path

from arena.errors import PolicyLoadError, PrerequisiteError
from arena_kit.contract.spec import IMAGE_DIR, Environment

__all__ = [
    "ENVIRONMENTS_GROUP",
    "IMAGE_DIR",
    "declaration",
    "entry_points",
    "environment_ids",
    "image_dirs",
    "preflight",
]

ENVIRONMENTS_GROUP = "arena.environments"
"""Each installed environment: id → its `Environment` declaration."""


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Each installed environment's entry point (not loaded: loading imports the package)."""
    return tuple(importlib.metadata.entry_points(group=ENVIRONMENTS_GROUP))


def environment_ids() -> list[str]:
    """Verifiers ids of the installed environments, sorted."""
    return sorted({point.name for point in entry_points()})


def declaration(point: importlib.metadata.EntryPoint) -> Environment:
    """The `Environment` an `arena.environments` entry point declares.

    Raises:
        PolicyLoadError: the point does not load, gives no `Environment`, or one of another id.
    """
    where = f"entry point {ENVIRONMENTS_GROUP}:{point.name} ({point.value})"
    try:
        value = point.load()
    except Exception as e:
        raise PolicyLoadError(f"{where} failed to load: {e!r}") from e
    if not isinstance(value, Environment):
        raise PolicyLoadError(f"{where} must give an arena_kit.contract.Environment, got {type(value).__name__}")
    if value.id != point.name:
        raise PolicyLoadError(f"{where} declares the id {value.id!r}; the entry point's name must be that id")
    return value


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


def preflight(env_id: str) -> None:
    """Refuse an environment verifiers would not run the way Arena runs it (`arena_kit.contract.check`):
    its package must export one Taskset and a LeanEnv, and its declaration must be on the contract.
    Imports the package and verifiers (a few seconds): for commands that go on to run evals.

    Raises:
        PrerequisiteError: a problem, in words.
    """
    from arena_kit.contract.check import contract_problems, export_problems

    point = next((p for p in entry_points() if p.name == env_id), None)
    if point is None:
        raise PrerequisiteError(f"no installed environment {env_id!r}; installed: {', '.join(environment_ids())}")
    try:
        spec = declaration(point)
        package = importlib.import_module(point.module.split(".")[0])
    except (PolicyLoadError, ImportError) as error:
        raise PrerequisiteError(f"environment {env_id}: {error}") from None
    problems = export_problems(package) + contract_problems(spec)
    if problems:
        raise PrerequisiteError(f"environment {env_id} cannot run: " + "; ".join(problems))
