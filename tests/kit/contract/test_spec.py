"""`Environment` and `OptOut`: a declaration is checked when made, exports the lean env, and loads nothing until asked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arena_kit.contract import Environment, OptOut


def _env(**kwargs: object) -> Environment:
    fields: dict[str, object] = {
        "id": "demo-env",
        "taskset": "demo_env.taskset:DemoTaskset",
        "policies": "demo_env.policies:POLICIES",
    }
    return Environment(**{**fields, **kwargs})  # type: ignore[arg-type]


def test_the_exports_are_the_taskset_and_the_lean_env() -> None:
    env = _env()
    assert env.package == "demo_env" and env.exports() == ["DemoTaskset", "LeanEnv"]
    assert env.export("LeanEnv").__name__ == "LeanEnv"
    with pytest.raises(AttributeError, match="demo_env.*no attribute 'Other'"):
        env.export("Other")


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"id": "Demo_Env"}, "lower-case words"),
        ({"taskset": "demo_env.taskset.DemoTaskset"}, "module:attribute"),
        ({"policies": "other.policies:POLICIES"}, "must be in its package 'demo_env'"),
        ({"adversaries": {"x": "not a ref"}}, "adversaries\\['x'\\]"),
    ],
)
def test_a_bad_declaration_is_refused_when_made(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        _env(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"reason": " "}, "needs a reason"),
        ({"reason": "r", "loosen": ("memory",)}, "the isolation fields are"),
        ({"reason": "r"}, "departs from nothing"),
    ],
)
def test_an_opt_out_must_say_why_and_from_what(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        OptOut(**kwargs)  # type: ignore[arg-type]


def test_the_declaration_module_imports_no_verifiers() -> None:
    """The model server and the image builder read declarations; verifiers costs ~4 CPU-s."""
    code = "import sys, json, arena_kit.contract\nprint(json.dumps('verifiers' in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) is False
