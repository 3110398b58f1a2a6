"""An in-box program as one file (arena-bash's `program/`, the ACP runner): its modules spliced in dependency order, their imports of each other dropped.

verifiers' `bundle_program` (`harnesses/utils/launch.py`) joins whole module sources under a PEP 723
header, its modules reaching each other through `TYPE_CHECKING` imports that the flat file resolves.
This program has no header (it runs on the image's `python3 -I`, stdlib only) and its modules import
each other for real, so they run, type-check and are tested on the host as they are. So the splice
drops those imports and each module's `from __future__` (hoisted once to the top), and refuses what
one flat namespace cannot hold: an import of a module not spliced before it, a package import below
module level or renamed, one top-level name bound two ways. Same sources, same bytes: the hash in
the box's file name (`harness.runner_path`) changes only when a module does.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from pathlib import Path

from arena_kit.errors import BundleError

__all__ = ["PROGRAM_MODULES", "PROGRAM_PACKAGE", "bundle", "program_source"]

PROGRAM_PACKAGE = "arena_kit.harnesses.arena_bash.program"
PROGRAM_MODULES = ("schemas", "wire", "stream", "model", "tools", "mcp_client", "compaction", "gate", "loop")
"""Splice order: each module after those it imports; `loop` last, its `__main__` guard ends the file."""
PROGRAM_DIR = Path(__file__).with_name("program")


def _binding_key(node: ast.stmt, module: str) -> list[tuple[str, tuple[str, ...]]]:
    """The names a top-level statement binds, each with what it binds it to."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, ("def", module))]
    if isinstance(node, ast.Import):
        return [
            (a.asname or a.name.split(".")[0], ("import", a.name if a.asname else a.name.split(".")[0]))
            for a in node.names
        ]
    if isinstance(node, ast.ImportFrom):
        return [(a.asname or a.name, ("from", node.module or "", a.name)) for a in node.names]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return [(t.id, ("def", module)) for t in targets if isinstance(t, ast.Name)]


def _module_body(name: str, text: str, package: str, spliced: Sequence[str]) -> tuple[str, str]:
    """(the module's docstring summary, its source without docstring, `__future__` and package imports)."""
    tree = ast.parse(text)
    dropped: set[int] = set()
    top_level = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top_level:
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if getattr(node, "level", 0) or any(m == package or m.startswith(package + ".") for m in modules):
                raise BundleError(f"{name}: import the program's modules at module level ({ast.unparse(node)})")
    summary = ""
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        summary = body[0].value.value.strip().splitlines()[0]
        body = body[1:]
        dropped.update(range(tree.body[0].lineno, (tree.body[0].end_lineno or 0) + 1))
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            if [a.name for a in node.names] != ["annotations"]:
                raise BundleError(f"{name}: only `from __future__ import annotations` is hoisted")
        elif isinstance(node, ast.Import) and any(
            a.name == package or a.name.startswith(package + ".") for a in node.names
        ):
            raise BundleError(f"{name}: write `from {package}.<module> import <name>`, not `{ast.unparse(node)}`")
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(package)):
            target = (node.module or "").removeprefix(package + ".")
            if node.level:
                raise BundleError(f"{name}: write `from {package}.<module> import <name>`, not `{ast.unparse(node)}`")
            if target not in spliced:
                raise BundleError(
                    f"{name}: `{ast.unparse(node)}` names no module spliced before {name} ({', '.join(spliced)})"
                )
            if any(a.asname for a in node.names):
                raise BundleError(f"{name}: `{ast.unparse(node)}` renames a name the flat file shares")
        else:
            continue
        dropped.update(range(node.lineno, (node.end_lineno or 0) + 1))
    kept = [line for number, line in enumerate(text.splitlines(), 1) if number not in dropped]
    return summary, "\n".join(kept).strip("\n")


def bundle(directory: Path, package: str, modules: Sequence[str]) -> bytes:
    """`modules` (files in `directory`, the package `package`) as one program, deterministically."""
    bound: dict[str, tuple[str, ...]] = {}
    chunks: list[str] = []
    for index, name in enumerate(modules):
        text = (directory / f"{name}.py").read_text(encoding="utf-8")
        summary, body = _module_body(name, text, package, modules[:index])
        for node in ast.parse(body).body:
            for binding, key in _binding_key(node, name):
                if bound.setdefault(binding, key) != key:
                    raise BundleError(f"{name}: {binding!r} is bound as {key} here and as {bound[binding]} before")
        chunks.append(f"# --- {name}: {summary}\n\n{body}\n")
    header = (
        f'"""An in-box program, spliced from `{package}` ({", ".join(modules)}):\n'
        'edit those modules, not this file."""\n\nfrom __future__ import annotations\n'
    )
    source = "\n\n".join([header, *chunks])
    compile(source, f"{package}.py", "exec")
    return source.encode("utf-8")


@functools.cache
def program_source() -> bytes:
    """The bundled program, built once per process."""
    return bundle(PROGRAM_DIR, PROGRAM_PACKAGE, PROGRAM_MODULES)
