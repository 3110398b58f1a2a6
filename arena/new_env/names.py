"""Whether a new environment's name is free: a verifiers id whose package, distribution and image clash with nothing.

The id is the entry point's name, the image's name and the distribution's; the package is the id
with `_` for `-`, which verifiers imports by that name, so it must not already be importable (a
stdlib or installed module would win, or be shadowed) nor be one of verifiers' own tasksets
(which verifiers resolves first). Nothing here imports verifiers or an environment.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import keyword
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from arena.errors import UsageError
from arena.images.specs import PLATFORM_IMAGES
from arena.installed import environment_ids
from arena_kit.contract.spec import ID_PATTERN

__all__ = ["MAX_LENGTH", "Names", "checkout_distributions", "checkout_root", "check_name"]

MAX_LENGTH = 40
PLATFORM_NAME = "arena-evals"
RESERVED = (*PLATFORM_IMAGES, "rootfs", "arena")


@dataclass(frozen=True)
class Names:
    env_id: str
    """The verifiers id, distribution and image name: `demo-env`."""
    package: str
    """The import package: `demo_env`."""
    classes: str
    """The prefix of the package's class names: `DemoEnv`."""


def check_name(name: str, checkout: Path | None) -> Names:
    """The names a new environment called `name` gets.

    Raises:
        UsageError: `name` is not an id, or it clashes (a reserved name, an installed environment,
            an importable module, a verifiers taskset, a distribution installed or in `checkout`).
    """
    if len(name) > MAX_LENGTH or not ID_PATTERN.match(name):
        raise UsageError(
            f"{name!r} is not an environment id: lower-case letters and digits in words joined by '-', "
            f"starting with a letter, at most {MAX_LENGTH} characters (e.g. demo-env)"
        )
    package = name.replace("-", "_")
    names = Names(name, package, "".join(part.capitalize() for part in name.split("-")))
    if name in RESERVED or keyword.iskeyword(package):
        raise UsageError(f"{name!r} is reserved (Arena's own images and package, Python keywords); choose another id")
    if name in environment_ids():
        raise UsageError(f"an environment {name!r} is installed already; choose another id")
    clash = _module_clash(package) or _distribution_clash(name, checkout)
    if clash:
        raise UsageError(f"{name!r} clashes with {clash}; choose another id")
    return names


def _module_clash(package: str) -> str | None:
    if importlib.util.find_spec(package) is not None:
        return f"the importable module {package!r} (stdlib or installed)"
    verifiers = importlib.util.find_spec("verifiers")
    for root in (verifiers.submodule_search_locations or []) if verifiers else []:
        tasksets = Path(root) / "v1" / "tasksets"
        if (tasksets / package).exists() or (tasksets / f"{package}.py").exists():
            return f"verifiers' own taskset {package!r} (verifiers resolves it first)"
    return None


def _distribution_clash(name: str, checkout: Path | None) -> str | None:
    normal = _normal(name)
    try:
        importlib.metadata.distribution(normal)
        return f"the installed distribution {normal!r}"
    except importlib.metadata.PackageNotFoundError:
        pass
    if checkout is not None and normal in checkout_distributions(checkout):
        return f"the distribution {normal!r} declared in {checkout}"
    return None


def _normal(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def checkout_root(start: Path) -> Path | None:
    """The Arena checkout holding `start` (the folder whose pyproject.toml is arena-evals'), or None."""
    for folder in (start.resolve(), *start.resolve().parents):
        if _project_name(folder / "pyproject.toml") == PLATFORM_NAME:
            return folder
    return None


def checkout_distributions(root: Path) -> set[str]:
    """The distribution names every pyproject.toml of the checkout declares (two levels deep)."""
    found = set()
    for path in (root / "pyproject.toml", *root.glob("*/pyproject.toml"), *root.glob("*/*/pyproject.toml")):
        name = _project_name(path)
        if name is not None:
            found.add(_normal(name))
    return found


def _project_name(path: Path) -> str | None:
    try:
        name = tomllib.loads(path.read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return name if isinstance(name, str) else None
