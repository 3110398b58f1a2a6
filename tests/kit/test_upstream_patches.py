"""Each change in `docs/upstream/` applies to the installed verifiers and leaves it importable, so a bump names the patches to redo."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT / "docs" / "upstream"
PATCHES = sorted(UPSTREAM.glob("*.patch"))
IDS = [p.stem for p in PATCHES]
SEAM_NAME = re.compile(r"arena_kit\.verifiers_seam\.(\w+)")


def _installed_verifiers() -> Path:
    spec = importlib.util.find_spec("verifiers")  # the package root only: verifiers.v1 is not imported here
    assert spec is not None and spec.origin is not None, "verifiers is not installed"
    return Path(spec.origin).parent


def _copy(tmp_path: Path) -> Path:
    """The installed verifiers laid out as its repository (`<tmp>/verifiers/...`)."""
    shutil.copytree(_installed_verifiers(), tmp_path / "verifiers", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _apply(tree: Path, patch: Path, *, check: bool = False) -> subprocess.CompletedProcess[str]:
    argv = ["git", "apply", *(["--check"] if check else []), str(patch)]
    return subprocess.run(argv, cwd=tree, capture_output=True, text=True, check=False)


def _touched_modules(patch: Path) -> list[str]:
    """The modules a patch changes or adds (`+++ b/verifiers/v1/x.py` → `verifiers.v1.x`)."""
    paths = re.findall(r"(?m)^\+\+\+ b/(verifiers/\S+)\.py$", patch.read_text())
    return sorted({p.removesuffix("/__init__").replace("/", ".") for p in paths})


def _imports(tree: Path, modules: list[str]) -> subprocess.CompletedProcess[str]:
    """Import `verifiers.v1` and `modules` from `tree` in a fresh interpreter, and print where verifiers came from."""
    code = (
        f"import importlib, verifiers.v1\nfor m in {modules!r}: importlib.import_module(m)\nprint(verifiers.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=False)


def test_there_are_patches_and_each_is_numbered() -> None:
    assert PATCHES
    assert all(re.fullmatch(r"\d\d-[a-z0-9-]+", p.stem) for p in PATCHES), IDS


@pytest.mark.parametrize("patch", PATCHES, ids=IDS)
def test_each_patch_applies_alone_to_the_installed_verifiers(patch: Path, tmp_path: Path) -> None:
    applied = _apply(_copy(tmp_path), patch, check=True)
    assert applied.returncode == 0, f"{patch.name} no longer applies: redo it against this verifiers\n{applied.stderr}"


def test_the_patches_apply_together_in_order(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    failed = [p.name for p in PATCHES if _apply(tree, p).returncode != 0]
    assert failed == []


@pytest.mark.parametrize("patch", PATCHES, ids=IDS)
def test_each_patch_has_a_message_naming_a_seam_module_that_exists(patch: Path) -> None:
    header, _, diff = patch.read_text().partition("\n---\n")
    assert diff.startswith("diff --git a/verifiers/"), "the header ends with a `---` line, then the diff"
    assert all(part in header for part in ("\nWhy: ", "\nWhat: ", "\nArena today: ")), header
    named = set(SEAM_NAME.findall(header))
    assert named, "the message names the seam module it retires"
    missing = [m for m in named if not (ROOT / "kit" / "arena_kit" / "verifiers_seam" / f"{m}.py").is_file()]
    assert missing == [], f"{patch.name} names seam modules that are gone (landed? then delete the patch): {missing}"


def test_the_index_lists_every_patch_and_only_those() -> None:
    linked = set(re.findall(r"\]\((\d\d-[a-z0-9-]+)\.patch\)", (UPSTREAM / "README.md").read_text()))
    assert linked == set(IDS)


@pytest.mark.slow
@pytest.mark.parametrize("patch", PATCHES, ids=IDS)
def test_the_installed_verifiers_with_each_patch_still_imports(patch: Path, tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    assert _apply(tree, patch).returncode == 0
    imported = _imports(tree, _touched_modules(patch))
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip().startswith(str(tree)), "the patched copy, not the installed verifiers, was imported"


@pytest.mark.slow
def test_the_installed_verifiers_with_every_patch_still_imports(tmp_path: Path) -> None:
    tree = _copy(tmp_path)
    for patch in PATCHES:
        assert _apply(tree, patch).returncode == 0, patch.name
    imported = _imports(tree, sorted({m for p in PATCHES for m in _touched_modules(p)}))
    assert imported.returncode == 0, imported.stderr[-2000:]
