"""The preflight names what keeps a package from running as Arena runs it, and `arena probe` refuses such a package."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import verifiers.v1 as vf

from arena.cli import main
from arena.errors import PrerequisiteError
from arena.installed import environment_ids, preflight
from arena_kit.contract.check import contract_problems, export_problems
from arena_testkit.scaffolded import scaffolded

ENV_ID = "check-unit"


@pytest.fixture
def package(tmp_path: Path) -> Iterator[ModuleType]:
    with scaffolded(ENV_ID, tmp_path):
        yield importlib.import_module("check_unit")


def test_a_scaffolded_package_has_no_problem(package: ModuleType) -> None:
    assert export_problems(package) == []
    assert contract_problems(package.ENVIRONMENT) == []
    preflight(ENV_ID)


def test_a_package_that_forgets_the_lean_env_is_named_and_refused(
    package: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(package, "__all__", ["CheckUnitTaskset"])
    assert any("exports no LeanEnv" in p for p in export_problems(package))
    assert any(
        "exports ['CheckUnitTaskset'], its Environment declares" in p for p in contract_problems(package.ENVIRONMENT)
    )
    with pytest.raises(PrerequisiteError, match="exports no LeanEnv"):
        preflight(ENV_ID)
    assert main(["probe", ENV_ID, "--tasks", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"arena: environment {ENV_ID} cannot run:") and err.count("\n") == 1


def test_two_tasksets_or_none_are_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = ModuleType("fake_env")
    fake.__all__ = ["A", "B"]  # type: ignore[attr-defined]
    fake.A = fake.B = type("T", (vf.Taskset,), {"load": lambda self: iter(())})  # type: ignore[attr-defined]
    assert any("exports 2 Taskset classes" in p for p in export_problems(fake))
    del fake.__all__  # type: ignore[attr-defined]
    assert export_problems(fake) == ["package fake_env has no __all__: verifiers resolves a taskset and an env from it"]


def test_a_task_bound_to_another_declaration_is_named(package: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    taskset = importlib.import_module("check_unit.taskset")
    monkeypatch.setattr(taskset.CheckUnitTask, "ENVIRONMENT", replace(package.ENVIRONMENT, grader_terms=("other",)))
    assert any("declares another ENVIRONMENT" in p for p in contract_problems(package.ENVIRONMENT))


def test_every_installed_environment_passes_the_preflight() -> None:
    for env_id in environment_ids():
        preflight(env_id)
    assert "check_unit" not in sys.modules
