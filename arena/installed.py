"""The installed environments, discovered one way: their entry points, never an import by name.

An environment on the contract declares itself in the `arena.environments` group: its verifiers id
is the name, its value an `arena_kit.contract.Environment` (policies, adversaries, box, exports). An
environment not yet on it publishes only its policies in the older `arena.policies` group (the id →
a `dict[str, Policy]`); both are read, and an id in both is taken from `arena.environments`. Its
image is `image/Dockerfile` in the entry point's top-level package either way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from pathlib import Path

from arena.errors import PolicyLoadError, PrerequisiteError
from arena_kit.contract.spec import IMAGE_DIR, Environment

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENVIRONMENTS_GROUP",
    "IMAGE_DIR",
    "declaration",
    "entry_points",
    "environment_ids",
    "image_dirs",
    "preflight",
]

ENVIRONMENTS_GROUP = "arena.environments"
"""An environment on the contract: id → its `Environment` declaration."""
ENTRY_POINT_GROUP = "arena.policies"
"""An environment not on the contract yet: id → its policies."""


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """Each installed environment's entry point, one per id (not loaded: loading imports the package)."""
    declared = tuple(importlib.metadata.entry_points(group=ENVIRONMENTS_GROUP))
    ids = {point.name for point in declared}
    return declared + tuple(p for p in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if p.name not in ids)


def environment_ids() -> list[str]:
    """Verifiers ids of the installed environments, sorted."""
    return sorted({point.name for point in entry_points()})


def declaration(point: importlib.metadata.EntryPoint) -> Environment | None:
    """The `Environment` an `arena.environments` entry point declares (None: a point of the older group).

    Raises:
        PolicyLoadError: the point does not load, gives no `Environment`, or one of another id.
    """
    if point.group != ENVIRONMENTS_GROUP:
        return None
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
    its package must export one Taskset and a LeanEnv, and a declared one must be on the contract.
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
    problems = export_problems(package) + (contract_problems(spec) if spec is not None else [])
    if problems:
        raise PrerequisiteError(f"environment {env_id} cannot run: " + "; ".join(problems))
