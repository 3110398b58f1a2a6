"""The `arena-bash` in-box program is spliced from its modules into one stdlib-only file, the same bytes for the same sources."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from arena_kit.errors import BundleError
from arena_kit.harnesses.arena_bash.bundle import (
    PROGRAM_DIR,
    PROGRAM_MODULES,
    PROGRAM_PACKAGE,
    bundle,
    program_source,
)
from arena_kit.harnesses.arena_bash.harness import RUNNER_SOURCE

PACKAGE = "fake_pkg.program"


def _write(directory: Path, sources: dict[str, str]) -> Path:
    for name, text in sources.items():
        (directory / f"{name}.py").write_text(text)
    return directory


def test_the_same_sources_give_the_same_bytes_and_a_changed_module_other_bytes(tmp_path: Path) -> None:
    assert bundle(PROGRAM_DIR, PROGRAM_PACKAGE, PROGRAM_MODULES) == program_source() == RUNNER_SOURCE
    assert program_source() is program_source()
    sources = {"a": '"""A."""\nfrom __future__ import annotations\nX = 1\n', "b": f"from {PACKAGE}.a import X\nY = X\n"}
    first = bundle(_write(tmp_path, sources), PACKAGE, ("a", "b"))
    assert bundle(tmp_path, PACKAGE, ("a", "b")) == first
    (tmp_path / "a.py").write_text(sources["a"].replace("X = 1", "X = 2"))
    assert bundle(tmp_path, PACKAGE, ("a", "b")) != first


def test_the_bundle_imports_only_the_standard_library_and_runs_its_loop_last() -> None:
    tree = ast.parse(program_source())
    modules = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    modules |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert modules - {"__future__"} <= set(sys.stdlib_module_names), modules - set(sys.stdlib_module_names)
    last = tree.body[-1]
    assert isinstance(last, ast.If) and ast.unparse(last.test) == "__name__ == '__main__'"


def test_every_program_module_is_bundled_and_under_300_lines() -> None:
    on_disk = {path.stem for path in PROGRAM_DIR.glob("*.py")} - {"__init__"}
    assert on_disk == set(PROGRAM_MODULES)
    lengths = {name: len((PROGRAM_DIR / f"{name}.py").read_text().splitlines()) for name in PROGRAM_MODULES}
    assert max(lengths.values()) < 300, lengths


def test_the_bundle_keeps_one_future_import_and_drops_the_modules_imports_of_each_other(tmp_path: Path) -> None:
    sources = {
        "a": '"""A does a."""\nfrom __future__ import annotations\n\nimport json\nX = json.dumps(1)\n',
        "b": f'"""B does b."""\nfrom __future__ import annotations\n\nimport json\nfrom {PACKAGE}.a import (\n    X,\n)\nY = X\n',
    }
    text = bundle(_write(tmp_path, sources), PACKAGE, ("a", "b")).decode()
    assert text.count("from __future__ import annotations") == 1 and PACKAGE not in text.split('"""', 2)[2]
    assert "# --- a: A does a." in text and "# --- b: B does b." in text
    namespace: dict[str, object] = {}
    exec(compile(text, "bundle", "exec"), namespace)
    assert namespace["Y"] == "1"


REFUSED = {
    "a-later-module": ({"a": f"from {PACKAGE}.b import Y\n", "b": "Y = 1\n"}, "names no module spliced before"),
    "an-import-in-a-function": (
        {"a": "X = 1\n", "b": f"def f():\n    from {PACKAGE}.a import X\n    return X\n"},
        "at module level",
    ),
    "a-renamed-name": ({"a": "X = 1\n", "b": f"from {PACKAGE}.a import X as Z\n"}, "renames"),
    "a-name-bound-twice": ({"a": "def run():\n    pass\n", "b": "from subprocess import run\n"}, "'run' is bound"),
    "a-relative-import": ({"a": "X = 1\n", "b": "from .a import X\n"}, "write `from"),
    "a-plain-package-import": ({"a": "X = 1\n", "b": f"import {PACKAGE}.a\n"}, "write `from"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_bundler_refuses_what_one_flat_namespace_cannot_hold(case: str, tmp_path: Path) -> None:
    sources, words = REFUSED[case]
    with pytest.raises(BundleError, match=words):
        bundle(_write(tmp_path, sources), PACKAGE, ("a", "b"))
