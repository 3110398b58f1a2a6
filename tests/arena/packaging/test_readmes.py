"""Every published package ships a README (its index page), and an environment's says what a user needs."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = [
    "",
    "kit",
    "toolsets/log_search",
    "toolsets/sqlite_sandbox",
    "environments/fault_localisation",
    "environments/schema_migration",
]
ENVIRONMENT_SECTIONS = ("What it measures", "Tools and budget", "Scoring", "Install and run")


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda f: f or "arena-evals")
def test_package_declares_its_readme(folder):
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    assert project.get("readme") == "README.md", f'{folder or "."}/pyproject.toml: declare readme = "README.md"'
    assert (ROOT / folder / "README.md").is_file()


@pytest.mark.parametrize("folder", [f for f in PACKAGES if f.startswith("environments/")])
def test_environment_readme_says_what_it_measures_its_splits_scoring_tools_and_budget(folder):
    text = (ROOT / folder / "README.md").read_text()
    headings = set(re.findall(r"(?m)^## (.+?)\s*$", text))
    assert set(ENVIRONMENT_SECTIONS) <= headings, sorted(set(ENVIRONMENT_SECTIONS) - headings)
    assert all(split in text for split in ("`train`", "`dev`", "`test`")) or "Splits" in headings
