"""What Python code handed to an interpreter (`python -c`, a heredoc, stdin) reaches, read from its AST.

Imports and the names given to `importlib` are module names; literals that look like paths are
paths; other literals are text; what the code prints or writes, its docstrings and its comments are
prose. A command string given to `os.system` or `subprocess` is read as shell code; one built at run
time is opaque. Code that does not parse is opaque: Python would not run it, and the rules' fallback
reads the command it came in.
"""

from __future__ import annotations

import ast
import base64
import binascii
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arena_kit.rewrite.shell_reach import Reach

__all__ = ["base64_text", "read"]

NET_MODULES = {
    "socket",
    "urllib",
    "urllib2",
    "urllib3",
    "requests",
    "httpx",
    "aiohttp",
    "http",
    "ftplib",
    "smtplib",
    "telnetlib",
    "websocket",
    "websockets",
    "paramiko",
    "asyncssh",
    "pycurl",
}
IMPORTERS = {
    "__import__",
    "import_module",
    "find_spec",
    "files",
    "distribution",
    "version",
    "metadata",
    "requires",
    "get_distribution",
    "get_loader",
    "find_loader",
}
"""Functions whose first argument is a module or distribution name."""
SHELL_CALLS = {"system", "popen", "getoutput", "getstatusoutput"}
PROCESS_CALLS = {"run", "call", "check_call", "check_output", "Popen", "spawn"}
PROSE_CALLS = {
    "print",
    "write",
    "writelines",
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "log",
    "echo",
    "secho",
    "pprint",
}
"""Calls whose string arguments are prose: printed, logged or written out."""
_PATHLIKE = re.compile(r"[~/]|\.[A-Za-z0-9]{1,10}$")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")


def base64_text(text: str) -> str | None:
    """The text a base64 literal stands for, when it is printable UTF-8 (a command hidden in one)."""
    if not _BASE64.fullmatch(text) or len(text) % 4:
        return None
    try:
        plain = base64.b64decode(text, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    return plain if plain.replace("\n", "").isprintable() else None


def read(code: str, found: Reach, shell: Callable[[str], None]) -> None:
    """Add what `code` reaches to `found`; `shell` reads a command string the code runs."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        found.opaque = True
        return
    prose = _prose_constants(tree)
    talks = any(module.split(".")[0] in NET_MODULES for module in _imports(tree))
    found.paths.extend(_imports(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            _call(node, found, shell)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value
            is_path = not any(c.isspace() for c in text) and _PATHLIKE.search(text) is not None
            (found.paths if is_path else found.texts).append(text)
            decoded = base64_text(text)
            if decoded is not None:
                found.texts.append(decoded)
            if talks:
                found.net.append(text)


def _imports(tree: ast.AST) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.append(node.module)
            modules.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _name(func: ast.expr) -> tuple[str, str]:
    """(owner, name) of a called function: `os.system` → ("os", "system"), `print` → ("", "print")."""
    if isinstance(func, ast.Attribute):
        owner = func.value
        return (
            owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else "",
            func.attr,
        )
    return ("", func.id) if isinstance(func, ast.Name) else ("", "")


def _prose_constants(tree: ast.AST) -> set[int]:
    """Ids of the string constants that are prose: docstrings and bare strings, and the text a call
    prints or writes (not the arguments of calls inside it: `print(open(path).read())` reads `path`)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST] = []
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            roots = [node.value]
        elif isinstance(node, ast.Call) and _name(node.func)[1] in PROSE_CALLS:
            roots = [*node.args, *(k.value for k in node.keywords)]
        for root in roots:
            ids.update(id(inner) for inner in _outside_calls(root) if isinstance(inner, ast.Constant))
    return ids


def _outside_calls(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Call):
        return []
    return [node, *(inner for child in ast.iter_child_nodes(node) for inner in _outside_calls(child))]


def _call(node: ast.Call, found: Reach, shell: Callable[[str], None]) -> None:
    owner, name = _name(node.func)
    first = node.args[0] if node.args else None
    if name in IMPORTERS and isinstance(first, ast.Constant) and isinstance(first.value, str):
        found.paths.append(first.value)
    runs_shell = owner in {"os", "subprocess", "commands"} and name in SHELL_CALLS
    runs_process = owner in {"subprocess", "asyncio"} and name in PROCESS_CALLS | {
        "create_subprocess_exec",
        "create_subprocess_shell",
    }
    if not (runs_shell or runs_process) or first is None:
        return
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        shell(first.value)
    elif isinstance(first, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in first.elts
    ):
        shell(shlex.join(str(e.value) for e in first.elts if isinstance(e, ast.Constant)))
    elif owner == "asyncio" and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
        shell(shlex.join(str(a.value) for a in node.args if isinstance(a, ast.Constant)))
    else:
        found.opaque = True
