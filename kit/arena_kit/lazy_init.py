"""Let a process (a tool server, vf-eval) skip package inits it does not need, so it imports only what it uses.

verifiers launches a shared tool server as `python -m <toolset module>`, and every toolset imports
verifiers for `vf.Toolset`. `verifiers/v1/__init__.py` re-exports the whole stack (the ACP and
model clients with the anthropic and openai SDKs, the judges with sympy) and
`verifiers/v1/mcp/__init__.py` the launcher with the interception server: about 2.5 of the 3.5
CPU-s a server spent before it served, one after the other with vf-eval's own imports. These inits
do nothing but re-export (and add a NullHandler), so in a server process this module puts a
stand-in for each in `sys.modules` that imports a name's defining module when the name is first
read. `vf.Toolset` is then the very class `verifiers.v1.mcp.toolset` defines, and a name nobody
reads costs nothing.

Which inits, and when, is verifiers-specific and lives in `arena_kit.verifiers_seam.package_inits`
(a tool server started as `python -m <that toolset>`, vf-eval when Arena launches it); this module is
the generic machinery: an init with any statement but re-exports is imported as usual, with a warning.
`tests/kit/test_lazy_init.py` pins both.

Two narrower tools serve vf-eval (`arena.vf_startup`): `defer_calls` makes chosen names of a
re-export init forwarders that import on their first call (for a module that binds a function at
import and calls it later), and `defer_init` runs a package's own init on the first read of one of
its names, while its submodules import without it.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
from types import ModuleType
from typing import Any

from arena_kit.errors import NotReexportOnly

__all__ = ["defer_calls", "defer_init", "defer_reexports", "launched_as", "reexports", "stand_in"]

_NULL_HANDLER = "_logging.getLogger(__name__).addHandler(_logging.NullHandler())"

logger = logging.getLogger(__name__)


def launched_as(module: str, argv: list[str] | None = None) -> bool:
    """Whether this process was started as `python [options] -m <module> ...`."""
    args = sys.orig_argv if argv is None else argv
    return any(arg == "-m" and args[i + 1 : i + 2] == [module] for i, arg in enumerate(args))


def reexports(package: str) -> tuple[dict[str, tuple[str, str | None]], list[str] | None, bool]:
    """Read a package's `__init__.py`: {name: (module, attribute or None for the module itself)},
    its `__all__` and whether it adds a NullHandler to its logger.

    Raises:
        NotReexportOnly: the init holds any other statement (or the package is not found).
    """
    import ast

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None or not spec.origin.endswith("__init__.py"):
        raise NotReexportOnly(f"{package} is not an installed package with an __init__.py")
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), spec.origin)
    names: dict[str, tuple[str, str | None]] = {}
    exported: list[str] | None = None
    null_handler = False
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module is not None and all(a.name != "*" for a in node.names):
            module = importlib.util.resolve_name("." * node.level + node.module, package) if node.level else node.module
            for alias in node.names:
                names[alias.asname or alias.name] = (module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and "." in alias.name:
                    raise NotReexportOnly(f"{spec.origin}:{node.lineno}: `import {alias.name}` binds a parent package")
                names[alias.asname or alias.name] = (alias.name, None)
        elif isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            exported = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.Expr) and ast.unparse(node) == _NULL_HANDLER:
            null_handler = True
        elif not (index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise NotReexportOnly(f"{spec.origin}:{node.lineno}: `{ast.unparse(node)[:80]}` is not a re-export")
    return names, exported, null_handler


def stand_in(package: str, calls: tuple[str, ...] = ()) -> ModuleType:
    """A module for `package` that imports each re-exported name's defining module on its first read
    (`calls`: names that are forwarders instead, see `defer_calls`).

    Raises:
        NotReexportOnly: the init is more than re-exports.
    """
    names, exported, null_handler = reexports(package)
    spec = importlib.util.find_spec(package)
    assert spec is not None  # reexports found it
    module = importlib.util.module_from_spec(spec)

    def resolve(name: str) -> Any:
        source, attribute = names[name]
        value = importlib.import_module(source)
        return getattr(value, attribute) if attribute is not None else value

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = resolve(name)
        setattr(module, name, value)
        return value

    for name in calls:
        if name not in names:
            raise NotReexportOnly(f"{package} does not re-export {name!r}")
        setattr(module, name, _forwarder(package, name, resolve))

    def __dir__() -> list[str]:
        return sorted({*names, *vars(module)})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    if exported is not None:
        setattr(module, "__all__", exported)
    if null_handler:
        logging.getLogger(package).addHandler(logging.NullHandler())
    return module


def _forwarder(package: str, name: str, resolve: Any) -> Any:
    """A function that imports `package.name` on its first call and forwards every call to it."""
    target: list[Any] = []

    def forward(*args: Any, **kwargs: Any) -> Any:
        if not target:
            target.append(resolve(name))
        return target[0](*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"`{package}.{name}`, imported on the first call."
    return forward


def defer_calls(package: str, calls: tuple[str, ...]) -> bool:
    """Put a lazy stand-in for `package` in `sys.modules` whose names in `calls` are forwarders: a
    module that binds them at import (`from package import f`) and calls them later imports the
    package's stack on the first call, not at its own import (False, nothing changed: `package` is
    already imported, or its init is more than re-exports or lacks a name in `calls`)."""
    if package in sys.modules:
        return False
    try:
        sys.modules[package] = stand_in(package, calls)
    except NotReexportOnly as error:
        sys.modules.pop(package, None)
        logger.warning("%s is imported in full: %s", package, error)
        return False
    return True


def defer_init(package: str) -> bool:
    """Put a stand-in for `package` in `sys.modules` that runs its real init on the first read of a
    name that is not one of its submodules, so `from package.types import X` imports that submodule
    without the init's own imports (False, nothing changed: already imported, or not a package)."""
    if package in sys.modules:
        return False
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()

    def __getattr__(name: str) -> Any:
        with lock:
            if "__getattr__" in vars(module):
                if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                    return importlib.import_module(f"{package}.{name}")
                del module.__getattr__
                loader.exec_module(module)
        try:
            return vars(module)[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[package] = module
    return True


def defer_reexports(packages: tuple[str, ...]) -> bool:
    """Put lazy stand-ins for `packages` (parents first) in `sys.modules` (False, and nothing changed: one
    is already imported, or an init is more than re-exports)."""
    if any(name in sys.modules for name in packages):
        return False
    importlib.import_module(packages[0].partition(".")[0])
    placed: list[str] = []
    try:
        for name in packages:  # parents first: finding a child's spec imports its parent
            parent, _, child = name.rpartition(".")
            sys.modules[name] = stand_in(name)
            setattr(sys.modules[parent], child, sys.modules[name])
            placed.append(name)
    except NotReexportOnly as error:
        for name in reversed(placed):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            delattr(sys.modules[parent], child)
        logger.warning("%s are imported in full: %s", ", ".join(packages), error)
        return False
    return True
