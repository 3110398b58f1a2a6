"""The user docs (README.md, docs/*.md, kit/README.md) point at things that exist and stay readable.

Checked: every relative link and its #anchor, every repository path and `arena…` module name written
in code, every `arena <command> --flag` against the real parsers, the kit's public-API table against
each module's `__all__`, the README's two set-up commands (CI runs `make test`), short table rows and
no issue numbers.
"""

from __future__ import annotations

import argparse
import ast
import importlib.machinery
import importlib.util
import re
from pathlib import Path

import pytest

from arena.cli import _parser
from runtime_bench.cli import build_parser as bench_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "kit/README.md", *(ROOT / "docs").glob("*.md")])
IDS = [str(p.relative_to(ROOT)) for p in DOCS]
MAX_ROW = 300
"""Characters in one table row: a longer row is a paragraph that belongs under the table."""
REPO_ROOTS = ("arena", "kit", "environments", "toolsets", "images", "runtime_bench", "configs", "tests", "docs")
WRITTEN_BY_COMMANDS = {"configs/images.lock.json", "dist/"}
"""Paths the docs name that a command writes (`arena images publish`, `make wheels`), absent from a checkout."""
PLACEHOLDER = re.compile(r"[<>*{}:…]|\.\.\.")
"""A span with these is a pattern, a placeholder or an image/model name (`arena/harness:latest`), not a path."""

FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text with fenced blocks and code spans removed (links inside code are not links)."""
    return SPAN.sub("", FENCE.sub("", text))


def _code(text: str) -> list[str]:
    """Every code span and every line of every fenced block."""
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()]
    return lines + SPAN.findall(FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"(?m)^#{1,6} (.+?)\s*$", FENCE.sub("", path.read_text()))}


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_relative_link_and_anchor_resolves(doc: Path) -> None:
    broken = []
    for match in LINK.finditer(_prose(doc.read_text())):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists():
            broken.append(f"{target}: no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, broken


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_repository_path_named_in_code_exists(doc: Path) -> None:
    missing = []
    for span in SPAN.findall(FENCE.sub("", doc.read_text())):
        if PLACEHOLDER.search(span) or " " in span or span in WRITTEN_BY_COMMANDS:
            continue
        if not (span.endswith("/") or re.search(r"\.\w+$", span) or span.count("/") >= 2):
            continue  # `arena/staller` is a model name, `arena/schema-migration` an image
        if span.split("/")[0] in REPO_ROOTS and "/" in span:
            base = ROOT
        elif doc == ROOT / "kit/README.md" and "/" in span and not span.startswith(("/", "~", ".")):
            base = ROOT / "kit/arena_kit"  # the kit's README names its parts relative to the package
        else:
            continue
        if not (base / span).exists():
            missing.append(span)
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def _spec(module: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None


def _source(module: str) -> ast.Module | None:
    """The parsed source of an importable module, found without running it (verifiers is slow to import)."""
    spec = _spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return ast.parse(Path(spec.origin).read_text())


def _defined(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Names a module or class body binds at its top level."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: node for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def _exports(module: str) -> set[str]:
    """A module's literal `__all__`."""
    tree = _source(module)
    assert tree is not None, f"{module} is not an importable module"
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _resolves(dotted: str) -> bool:
    """A module, or a name a module (and then a class in it) defines. Only packages are imported (by
    `find_spec` of their submodules), never the module itself."""
    parts = dotted.split(".")
    cut = 1
    while cut < len(parts):
        spec = _spec(".".join(parts[:cut]))
        if spec is None:
            return False
        if spec.submodule_search_locations is None or _spec(".".join(parts[: cut + 1])) is None:
            break  # a plain module, or a package whose next part is a name it defines
        cut += 1
    tree = _source(".".join(parts[:cut]))
    if tree is None:
        return False
    body: list[ast.stmt] = tree.body
    for attr in parts[cut:]:
        node = _defined(body).get(attr)
        if node is None:
            return False
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_module_name_in_code_resolves(doc: Path) -> None:
    names = {s for s in SPAN.findall(doc.read_text()) if re.fullmatch(r"(arena|arena_kit|runtime_bench)(\.\w+)+", s)}
    unresolved = sorted(n for n in names if not _resolves(n))
    assert not unresolved, f"{doc.relative_to(ROOT)} names modules or attributes that do not import: {unresolved}"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


COMMAND = re.compile(r"(?:^|[\s(]|bin/)arena\s+([a-z]+(?:-[a-z]+)*)((?:\s+[a-z]+(?![\w-])(?:\\?\|[a-z]+)*)?)(.*)")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _documented_commands() -> list[tuple[str, str, str, str]]:
    """(doc, command, action or '', flag or '') for every `arena …` written in code."""
    found = []
    for doc in DOCS:
        for code in _code(doc.read_text()):
            match = COMMAND.search(code)
            if match is None:
                continue
            command, action, rest = match.group(1), match.group(2).strip(), re.split(r"\s[#;&]", match.group(3))[0]
            actions = re.split(r"\\?\|", action) if action else [""]
            flags = FLAG.findall(rest) if command != "images" or action else []
            found += [(str(doc.relative_to(ROOT)), command, a, f) for a in actions for f in flags or [""]]
    return found


def test_docs_name_commands_at_all() -> None:
    assert {c for _, c, _, _ in _documented_commands()} >= {
        "demo",
        "probe",
        "serve",
        "view",
        "compare",
        "audit",
        "bench",
        "images",
        "reap",
        "new-env",
    }


def test_every_documented_command_and_flag_is_one_the_cli_accepts() -> None:
    commands = _subparsers(_parser())
    unknown = []
    for doc, command, action, flag in _documented_commands():
        if command == "bench":
            parser = bench_parser()
        elif command not in commands:
            unknown.append(f"{doc}: arena {command}")
            continue
        else:
            parser = commands[command]
        actions = _subparsers(parser)
        if actions and action:
            if action not in actions:
                unknown.append(f"{doc}: arena {command} {action}")
                continue
            parser = actions[action]
        if flag and flag not in _flags(parser) | _flags(_parser()):
            unknown.append(f"{doc}: arena {command} {action} {flag}".replace("  ", " "))
    assert not unknown, unknown


KIT_API_ROW = re.compile(r"^\| `(arena_kit[\w.]*)` \| (.+) \|$", re.M)


def test_the_kit_readme_lists_only_names_its_modules_export() -> None:
    rows = KIT_API_ROW.findall((ROOT / "kit/README.md").read_text())
    assert len(rows) >= 8, "the kit README's public-API table is missing"
    wrong = {}
    for module, names in rows:
        exported = _exports(module)
        listed = set(SPAN.findall(names))
        if listed - exported:
            wrong[module] = sorted(listed - exported)
    assert not wrong, f"kit/README.md lists names these modules do not export: {wrong}"


def test_the_readme_holds_the_two_set_up_commands_ci_runs() -> None:
    blocks = FENCE.findall((ROOT / "README.md").read_text())
    commands = {line.split("#")[0].strip() for block in blocks for line in block.splitlines()}
    assert {"make demo", "make test"} <= commands
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_the_documented_fast_tier_is_the_command_make_test_fast_runs() -> None:
    recipe = re.search(r"^test-fast:.*\n\t\$\(BIN\)/(pytest[^\n]*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no test-fast target running pytest"
    documented = re.search(r"`make test-fast` \(`(pytest[^`]*)`", (ROOT / "docs/layout.md").read_text())
    assert documented, "docs/layout.md does not spell out the command behind make test-fast"
    assert documented.group(1) == recipe.group(1)
    assert "-m 'not docker and not slow'" in recipe.group(1)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_no_table_row_is_a_paragraph(doc: Path) -> None:
    long = [line[:80] + "…" for line in doc.read_text().splitlines() if line.startswith("|") and len(line) > MAX_ROW]
    assert not long, f"{doc.relative_to(ROOT)}: table rows over {MAX_ROW} characters: {long}"


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_user_docs_cite_no_issue_numbers(doc: Path) -> None:
    cited = re.findall(r"(?i)\bissues? #?\d+|(?<![\w&/])#\d+\b", _prose(doc.read_text()))
    assert not cited, f"{doc.relative_to(ROOT)}: {cited}"
