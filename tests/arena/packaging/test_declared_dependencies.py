"""Every package declares, in its pyproject, each distribution its code imports (none rides on another's)."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "arena-evals": (ROOT, ("arena", "runtime_bench")),
    "arena-kit": (ROOT / "kit", ("arena_kit",)),
    "log-search": (ROOT / "toolsets/log_search", ("log_search",)),
    "sqlite-sandbox": (ROOT / "toolsets/sqlite_sandbox", ("sqlite_sandbox",)),
    "fault-localisation": (ROOT / "environments/fault_localisation", ("fault_localisation",)),
    "schema-migration": (ROOT / "environments/schema_migration", ("schema_migration",)),
}
CHECKOUT_SCRIPTS = {"runtime_bench/bench_grader.py", "runtime_bench/bench_log_search.py"}
"""Benchmarks run from a checkout (`python runtime_bench/bench_*.py`, their docstrings say so) with
every environment installed; nothing imports them."""
CHECKOUT_FOLDERS = ("runtime_bench/measure/",)
"""Measurement scripts run from a checkout (some with the tests' helpers on PYTHONPATH); not shipped."""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(folder: Path) -> tuple[str, set[str]]:
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    # A module only an extra's code imports (e.g. the `train` extra's scikit-learn) is declared there.
    extras = [req for reqs in project.get("optional-dependencies", {}).values() for req in reqs]
    names = {
        _normalise(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req).group(0))
        for req in [*project.get("dependencies", []), *extras]
    }
    return _normalise(project["name"]), names


def _imported_modules(folder: Path, packages: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """(top-level modules imported, modules the package itself defines) over its source files."""
    imported: set[str] = set()
    own: set[str] = set(packages)
    for package in packages:
        for path in (folder / package).rglob("*.py"):
            relative = path.relative_to(folder).as_posix()
            if relative in CHECKOUT_SCRIPTS or relative.startswith(CHECKOUT_FOLDERS):
                continue
            if path.name == "__init__.py":
                own.add(path.parent.name)
            own.add(path.stem)  # a module run as a script (a confined child) imports its siblings by bare name
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    return imported, own


@pytest.mark.parametrize("dist", sorted(PACKAGES))
@pytest.mark.slow
def test_package_declares_every_distribution_it_imports(dist):
    folder, packages = PACKAGES[dist]
    name, declared = _declared(folder)
    assert name == dist
    imported, own = _imported_modules(folder, packages)
    owners = packages_distributions()
    third_party = imported - own - set(sys.stdlib_module_names) - {"__future__"}
    missing = {}
    for module in sorted(third_party):
        dists = {_normalise(d) for d in owners.get(module, [])}
        assert dists, f"{dist} imports {module!r}, which no installed distribution provides"
        if not dists & declared:
            missing[module] = sorted(dists)
    assert not missing, f"{folder.relative_to(ROOT)}/pyproject.toml must declare (module → distribution): {missing}"


def test_platform_distribution_is_not_the_unrelated_arena_on_pypi():
    name, _ = _declared(ROOT)
    assert name != "arena", "`arena` on PyPI is an are.na client: `pip install arena` must not be our install line"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["arena"] == "arena.cli:main"
