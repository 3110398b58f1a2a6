"""The package `arena new-env` writes passes its own tests, mypy strict and ruff (check and format) as it stands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.new_env import new_environment

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _names, folder, _written = new_environment("demo-env", tmp_path_factory.mktemp("scaffold") / "demo_env")
    return folder


def _run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **env})


def test_its_own_tests_pass(package: Path) -> None:
    done = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests"],
        package,
        PYTHONPATH=str(package),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "10 passed" in done.stdout


def test_it_type_checks_strictly_with_the_project_s_settings(package: Path) -> None:
    done = _run(
        [
            str(BIN / "mypy"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--no-incremental",
            str(package / "demo_env"),
            str(package / "tests"),
        ],
        ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_it_is_lint_clean_and_formatted(package: Path) -> None:
    for argv in (["check"], ["format", "--check"]):
        done = _run([str(BIN / "ruff"), *argv, "--config", str(ROOT / "pyproject.toml"), str(package)], ROOT)
        assert done.returncode == 0, done.stdout[-3000:]
