"""arena_kit.lazy_init against the pinned verifiers: its inits are re-exports only, and the stand-ins give the same objects."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from arena_kit.lazy_init import DEFERRED, HOOKED_VERSION, NotReexportOnly, launched_as, reexports


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
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


def test_every_stand_in_name_is_the_object_the_real_init_binds() -> None:
    # With the stand-ins in place, run each real init's source in a scratch namespace: its imports bind
    # the very objects (modules are cached), which every stand-in name must resolve to.
    code = """
import importlib.util, json, sys
from arena_kit.lazy_init import DEFERRED, defer_verifiers_init
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
    loaded = json.loads(_run(
        "import json, sys\nfrom arena_kit.lazy_init import defer_verifiers_init\nassert defer_verifiers_init()\n"
        "import verifiers.v1 as vf\nassert vf.State.__module__ == 'verifiers.v1.state'\n"
        "print(json.dumps(sorted(sys.modules)))"))
    assert "verifiers.v1.state" in loaded
    assert not {"verifiers.v1.acp", "verifiers.v1.judge", "verifiers.v1.clients", "anthropic", "sympy"} & set(loaded)


def test_a_process_that_imported_verifiers_is_left_alone() -> None:
    assert _run("import verifiers.v1 as vf, sys\nfrom arena_kit.lazy_init import defer_verifiers_init\n"
                "print(defer_verifiers_init(), sys.modules['verifiers.v1'] is vf, hasattr(vf, 'Env'))") == "False True True"


def test_another_verifiers_version_imports_in_full() -> None:
    out = _run("import importlib.metadata as m, sys\nm.version = lambda name: '9.9.9'\n"
               "from arena_kit.lazy_init import defer_verifiers_init\nprint(defer_verifiers_init(), 'verifiers.v1' in sys.modules)")
    assert out == "False False"


def test_an_init_that_does_more_than_reexport_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "busy_init_pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""Doc."""\nfrom os.path import join\n__all__ = ["join"]\nSETTING = join("a", "b")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(NotReexportOnly, match="SETTING"):
        reexports("busy_init_pkg")
    (package / "__init__.py").write_text('"""Doc."""\nfrom os.path import join as j\nimport json\n__all__ = ["j"]\n')
    assert reexports("busy_init_pkg") == ({"j": ("os.path", "join"), "json": ("json", None)}, ["j"], False)


@pytest.mark.parametrize(("argv", "expected"), [
    (["python", "-m", "log_search.toolset"], True),
    (["python", "-X", "importtime", "-m", "log_search.toolset", "--x"], True),
    (["python", "-m", "log_search.toolsets"], False),
    (["python", "-c", "-m", "log_search"], False),
    (["python", "-m"], False),
    (["vf-eval", "@", "x.toml"], False),
])
def test_launched_as_reads_the_module_after_dash_m(argv: list[str], expected: bool) -> None:
    assert launched_as("log_search.toolset", argv) is expected
