"""The kit's exceptions live in `arena_kit.errors`, which imports no verifiers; its box faults are verifiers' `SandboxError`s."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

import pytest
from verifiers.v1.errors import SandboxError, stop_condition

import arena_kit
from arena_kit import errors

IN_BOX = ("arena_kit.harnesses.arena_bash.program", "arena_kit.harnesses.acp_runner")
"""Programs that run in the box on the standard library alone (bundled without the kit): their exceptions stay theirs."""
SANDBOX_FAULTS = {
    "BoxLostError": "boxlost_error",
    "EngineUnreachableError": "engineunreachable_error",
    "StartMissedError": "startmissed_error",
    "BoxOomError": "boxoom_error",
    "AgentKilledBoxError": "agentkilledbox_error",
    "BoxOverBoundError": "boxoverbound_error",
}


def exception_classes_outside_errors() -> dict[str, list[str]]:
    """Module → the exception classes it defines, for every kit module but `arena_kit.errors` and the in-box programs."""
    found: dict[str, list[str]] = {}
    for module in pkgutil.walk_packages(arena_kit.__path__, "arena_kit."):
        if module.name == "arena_kit.errors" or module.name.startswith(IN_BOX):
            continue
        loaded = importlib.import_module(module.name)
        classes = [
            name
            for name, value in vars(loaded).items()
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.name
        ]
        if classes:
            found[module.name] = sorted(classes)
    return found


@pytest.mark.slow
def test_no_kit_module_but_errors_defines_an_exception() -> None:
    assert exception_classes_outside_errors() == {}


def test_importing_the_errors_imports_no_verifiers() -> None:
    code = "import sys, json\nimport arena_kit.errors\nprint(json.dumps('verifiers' in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) is False


@pytest.mark.parametrize("name", sorted(SANDBOX_FAULTS))
def test_each_box_fault_is_a_sandbox_error_under_its_own_name_and_stop_condition(name: str) -> None:
    fault = getattr(errors, name)
    assert issubclass(fault, SandboxError) and fault.__name__ == name and fault.__module__ == "arena_kit.errors"
    assert stop_condition(fault("x")) == SANDBOX_FAULTS[name]
    assert getattr(errors, name) is fault and fault.__doc__


def test_every_exception_of_the_module_is_exported_and_a_wrong_name_is_an_attribute_error() -> None:
    exported = {name for name in errors.__all__ if issubclass(getattr(errors, name), BaseException)}
    assert exported == set(errors.__all__)
    with pytest.raises(AttributeError, match="NoSuchError"):
        errors.NoSuchError  # noqa: B018
