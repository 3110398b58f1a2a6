"""`arena --help` stays fast: the CLI path imports neither verifiers nor the bench, and the host side
reads traces and launches evals without the rollout machinery."""

import subprocess
import sys

import pytest


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys; print('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(done.stdout.split())


def test_the_cli_module_imports_no_verifiers_and_no_bench():
    loaded = _modules_after("import arena.cli")
    assert "verifiers" not in loaded and "runtime_bench" not in loaded


def test_arena_help_imports_no_verifiers_and_no_bench():
    code = "import arena.cli\ntry:\n    arena.cli.main(['--help'])\nexcept SystemExit:\n    pass"
    loaded = _modules_after(code)
    assert "verifiers" not in loaded and "runtime_bench" not in loaded


@pytest.mark.parametrize("module", ["arena.evalrun", "arena.traces", "arena.audit", "arena_kit.records"])
def test_host_modules_that_read_or_launch_runs_import_no_verifiers(module):
    assert "verifiers" not in _modules_after(f"import {module}")


def test_bench_help_reaches_the_bench_parser():
    done = subprocess.run([sys.executable, "-m", "arena.cli", "bench", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "usage: arena bench" in done.stdout and "--quick" in done.stdout
