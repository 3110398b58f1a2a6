"""arena_kit.lazy_init against the pinned verifiers: its inits are re-exports only, and the stand-ins give the same objects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from arena_kit.errors import NotReexportOnly
from arena_kit.lazy_init import launched_as, reexports
from arena_kit.verifiers_seam import VERIFIERS_VERSION as HOOKED_VERSION
from arena_kit.verifiers_seam.package_inits import DEFERRED


def _run(code: str, path: Path | None = None) -> str:
    """`code`'s last printed line, run in a fresh interpreter (with `path`, a folder of packages, importable)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(path) if path else "", os.environ.get("PYTHONPATH", "")])),
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-1]


def test_the_pinned_verifiers_is_the_version_the_stand_ins_were_written_for() -> None:
    # A verifiers upgrade fails here first: re-read its package inits, then move HOOKED_VERSION.
    assert version("verifiers") == HOOKED_VERSION


@pytest.mark.parametrize("package", DEFERRED)
def test_verifiers_package_inits_hold_only_reexports(package: str) -> None:
    names, exported, _ = reexports(package)
    assert names and exported
    assert set(exported) <= set(names), f"{package}.__all__ names what its init does not import"


@pytest.mark.slow  # a fresh interpreter imports all of verifiers: 73 s on the loaded 2-core machine
def test_every_stand_in_name_is_the_object_the_real_init_binds() -> None:
    # With the stand-ins in place, run each real init's source in a scratch namespace: its imports bind
    # the very objects (modules are cached), which every stand-in name must resolve to.
    code = """
import importlib.util, json, sys
from arena_kit.verifiers_seam.package_inits import DEFERRED, defer_verifiers_init
assert defer_verifiers_init()
report = {}
for package in DEFERRED:
    stand_in = sys.modules[package]
    origin = importlib.util.find_spec(package).origin
    real = {"__name__": package, "__package__": package}
    exec(compile(open(origin).read(), origin, "exec"), real)
    names = [n for n in real if not n.startswith("__")]
    report[package] = {"names": len(names), "all": stand_in.__all__ == real["__all__"],
                       "differ": [n for n in names if getattr(stand_in, n) is not real[n]],
                       "still_lazy": type(sys.modules[package]) is type(stand_in) and sys.modules[package] is stand_in}
print(json.dumps(report))
"""
    report = json.loads(_run(code))
    for package, found in report.items():
        assert found["names"] > 5 and found["all"] and found["still_lazy"], (package, found)
        assert found["differ"] == [], f"{package}: stand-in names bound to other objects: {found['differ']}"


def test_a_stand_in_imports_only_what_is_read() -> None:
    loaded = json.loads(
        _run(
            "import json, sys\nfrom arena_kit.verifiers_seam.package_inits import defer_verifiers_init\nassert defer_verifiers_init()\n"
            "import verifiers.v1 as vf\nassert vf.State.__module__ == 'verifiers.v1.state'\n"
            "print(json.dumps(sorted(sys.modules)))"
        )
    )
    assert "verifiers.v1.state" in loaded
    assert not {"verifiers.v1.acp", "verifiers.v1.judge", "verifiers.v1.clients", "anthropic", "sympy"} & set(loaded)


@pytest.mark.slow
def test_a_process_that_imported_verifiers_is_left_alone() -> None:
    assert (
        _run(
            "import verifiers.v1 as vf, sys\nfrom arena_kit.verifiers_seam.package_inits import defer_verifiers_init\n"
            "print(defer_verifiers_init(), sys.modules['verifiers.v1'] is vf, hasattr(vf, 'Env'))"
        )
        == "False True True"
    )


def test_another_verifiers_version_imports_in_full() -> None:
    out = _run(
        "import importlib.metadata as m, sys\nm.version = lambda name: '9.9.9'\n"
        "from arena_kit.verifiers_seam.package_inits import defer_verifiers_init\nprint(defer_verifiers_init(), 'verifiers.v1' in sys.modules)"
    )
    assert out == "False False"


def test_an_init_that_does_more_than_reexport_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "busy_init_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""Doc."""\nfrom os.path import join\n__all__ = ["join"]\nSETTING = join("a", "b")\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotReexportOnly, match="SETTING"):
        reexports("busy_init_pkg")
    (package / "__init__.py").write_text('"""Doc."""\nfrom os.path import join as j\nimport json\n__all__ = ["j"]\n')
    assert reexports("busy_init_pkg") == ({"j": ("os.path", "join"), "json": ("json", None)}, ["j"], False)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python", "-m", "log_search.toolset"], True),
        (["python", "-X", "importtime", "-m", "log_search.toolset", "--x"], True),
        (["python", "-m", "log_search.toolsets"], False),
        (["python", "-c", "-m", "log_search"], False),
        (["python", "-m"], False),
        (["vf-eval", "@", "x.toml"], False),
    ],
)
def test_launched_as_reads_the_module_after_dash_m(argv: list[str], expected: bool) -> None:
    assert launched_as("log_search.toolset", argv) is expected


def test_a_deferred_call_imports_its_package_on_the_first_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "calls_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""Doc."""\nfrom calls_pkg.heavy import double, TABLE\n__all__ = ["double", "TABLE"]\n'
    )
    (package / "heavy.py").write_text("TABLE = {'a': 1}\ndef double(x):\n    return 2 * x\n")
    (package / "errors.py").write_text("class Slow(Exception):\n    pass\n")
    code = (
        "import sys\nfrom arena_kit.lazy_init import defer_calls\n"
        "assert defer_calls('calls_pkg', ('double',))\n"
        "from calls_pkg import double\nfrom calls_pkg.errors import Slow\nbefore = 'calls_pkg.heavy' in sys.modules\n"
        "result = double(21)\nimport calls_pkg, calls_pkg.heavy as h\n"
        "print(before, result, 'calls_pkg.heavy' in sys.modules, calls_pkg.TABLE is h.TABLE, defer_calls('calls_pkg', ()))"
    )
    assert _run(code, tmp_path) == "False 42 True True False"


def test_a_deferred_call_the_package_does_not_export_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "calls_pkg2"
    package.mkdir()
    (package / "__init__.py").write_text("from os.path import join\n")
    code = (
        "import sys\nfrom arena_kit.lazy_init import defer_calls\n"
        "print(defer_calls('calls_pkg2', ('split',)), 'calls_pkg2' in sys.modules)"
    )
    assert _run(code, tmp_path) == "False False"


def test_a_deferred_init_runs_on_the_first_name_read_and_not_on_a_submodule_import(tmp_path: Path) -> None:
    package = tmp_path / "init_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import sys\nsys.modules['init_pkg_ran'] = sys\nfrom init_pkg.types import Point\n"
        "from init_pkg import _helper\nCLIENT = object()\n"
    )
    (package / "types.py").write_text("from . import _helper\nclass Point:\n    pass\n")
    (package / "_helper.py").write_text("VALUE = 1\n")
    code = (
        "import sys\nfrom arena_kit.lazy_init import defer_init\n"
        "assert defer_init('init_pkg')\nfrom init_pkg.types import Point\nbefore = 'init_pkg_ran' in sys.modules\n"
        "import init_pkg\nclient = init_pkg.CLIENT\n"
        "print(before, 'init_pkg_ran' in sys.modules, init_pkg.Point is Point, init_pkg.CLIENT is client,\n"
        "      hasattr(init_pkg, 'missing'), defer_init('init_pkg'))"
    )
    assert _run(code, tmp_path) == "False True True True False False"


@pytest.mark.slow
def test_a_deferred_anthropic_init_gives_the_real_names_when_read() -> None:
    code = """
import json, sys
from arena_kit.lazy_init import defer_init
assert defer_init('anthropic')
from anthropic.types import Message, Usage
import anthropic
before = 'anthropic._client' in sys.modules
names = anthropic.__all__
print(json.dumps({"before": before, "all": len(names), "missing": [n for n in names if not hasattr(anthropic, n)],
                  "same": anthropic.Anthropic is sys.modules['anthropic._client'].Anthropic and anthropic.types.Message is Message}))
"""
    report = json.loads(_run(code))
    assert report == {"before": False, "all": report["all"], "missing": [], "same": True} and report["all"] > 50
