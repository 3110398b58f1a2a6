"""Source modules stay small and acyclic: none over 600 lines, no import cycle, function-body imports included.

The source is every module under `arena/`, `kit/`, `toolsets/*/<pkg>/`, `environments/*/<pkg>/` and
`runtime_bench/`. An edge is any import of another source module, wherever it is written: a cycle
hidden in function bodies is still a cycle (it only moves the failure from import time to the first
call). Imports under `if TYPE_CHECKING:` are not edges: they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 600


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` at `line` of its file."""

    source: str
    target: str
    line: int


def source_modules(repo: Path) -> dict[str, Path]:
    """Dotted module name → file, for every package the shape rule covers."""
    roots = [(repo, repo / "arena"), (repo, repo / "runtime_bench")]
    roots += [(repo / "kit", package.parent) for package in sorted((repo / "kit").glob("*/__init__.py"))]
    for family in ("toolsets", "environments"):
        roots += [
            (package.parent.parent, package.parent) for package in sorted((repo / family).glob("*/*/__init__.py"))
        ]
    modules: dict[str, Path] = {}
    for root, package in roots:
        for path in sorted(package.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all of them but those under `if TYPE_CHECKING:`."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    for field, value in ast.iter_fields(node):
        if isinstance(node, ast.If) and field == "body" and _is_type_checking(node.test):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _imports(child)


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    """Each import of one source module by another (parent packages a dotted import runs are left out)."""
    edges = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            edges += [
                Edge(name, target, node.lineno)
                for target in dict.fromkeys(targets)
                if target in modules and target != name
            ]
    return edges


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan), sorted."""
    graph: dict[str, list[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge.target)
        graph.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def long_modules(modules: dict[str, Path]) -> dict[str, int]:
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules.items()}
    return {name: count for name, count in sorted(lengths.items()) if count > MAX_LINES}


def _describe(component: list[str], edges: list[Edge], modules: dict[str, Path], repo: Path) -> str:
    inside = [e for e in edges if e.source in component and e.target in component]
    return "; ".join(f"{modules[e.source].relative_to(repo)}:{e.line} imports {e.target}" for e in inside)


def test_the_shape_rule_covers_every_source_tree() -> None:
    modules = source_modules(REPO)
    tops = {name.split(".")[0] for name in modules}
    assert {
        "arena",
        "arena_kit",
        "runtime_bench",
        "log_search",
        "sqlite_sandbox",
        "fault_localisation",
        "schema_migration",
    } <= tops
    assert "arena_kit.harnesses.arena_bash.program.loop" in modules


def test_no_source_module_is_over_600_lines() -> None:
    assert long_modules(source_modules(REPO)) == {}, "split these by job (docs: style guide, 'Layout and size')"


@pytest.mark.slow
def test_no_import_cycle_among_source_modules_function_body_imports_included() -> None:
    modules = source_modules(REPO)
    edges = import_edges(modules)
    found = cycles(edges)
    assert not found, "\n".join(_describe(c, edges, modules, REPO) for c in found)


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in {"arena/__init__.py": "", **files}.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "kit").mkdir(exist_ok=True)
    return source_modules(tmp_path)


def test_a_module_of_601_lines_is_reported_and_one_of_600_is_not(tmp_path: Path) -> None:
    modules = _tree(tmp_path, {"arena/long.py": "x = 1\n" * 601, "arena/fits.py": "x = 1\n" * 600})
    assert long_modules(modules) == {"arena.long": 601}


CYCLES = {
    "at-module-level": ("from arena import b\n", "import arena.a\n", [["arena.a", "arena.b"]]),
    "hidden-in-a-function-body": (
        "def f():\n    from arena.b import g\n",
        "from arena.a import f\n",
        [["arena.a", "arena.b"]],
    ),
    "relative-imports": ("from .b import g\n", "from . import a\n", [["arena.a", "arena.b"]]),
    "type-only-is-no-edge": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arena.b import g\n",
        "from arena.a import f\n",
        [],
    ),
    "typing-dot-type-checking-too": (
        "import typing\nif typing.TYPE_CHECKING:\n    import arena.b\nelse:\n    pass\n",
        "import arena.a\n",
        [],
    ),
    "else-branch-still-runs": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    import arena.b\n",
        "import arena.a\n",
        [["arena.a", "arena.b"]],
    ),
}


@pytest.mark.parametrize("case", list(CYCLES))
def test_cycles_are_found_wherever_the_import_runs_and_only_there(case: str, tmp_path: Path) -> None:
    a, b, want = CYCLES[case]
    modules = _tree(tmp_path, {"arena/a.py": a, "arena/b.py": b})
    assert cycles(import_edges(modules)) == want
