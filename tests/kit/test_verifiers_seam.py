"""verifiers' private names appear only in `arena_kit/verifiers_seam`, and the seam's guards name it when one is gone."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache
from pathlib import Path

import pytest
import verifiers

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = ("arena", "kit", "runtime_bench", "toolsets", "environments")
SEAM = ROOT / "kit" / "arena_kit" / "verifiers_seam"


def _sources() -> list[Path]:
    return [
        p
        for root in SOURCE_ROOTS
        for p in (ROOT / root).rglob("*.py")
        if ".venv" not in p.parts and "build" not in p.parts and SEAM not in p.parents
    ]


def private_verifiers_names(source: str) -> list[str]:
    """Underscore names `source` imports from verifiers or reads off a verifiers module (by any alias)."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "verifiers":
            parts = (node.module or "").split(".")
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            found += [node.module or "" for part in parts if part.startswith("_") and not part.startswith("__")]
            aliases |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "verifiers":
                    aliases.add(alias.asname or alias.name.split(".")[0])
                    found += [
                        alias.name
                        for part in alias.name.split(".")
                        if part.startswith("_") and not part.startswith("__")
                    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases and base.id not in {"self", "cls"}:
                found.append(ast.unparse(node))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_privates(node: ast.ClassDef) -> set[str]:
    """The single-underscore names a class statement defines: methods, class attributes, `self._x = ...` anywhere in it."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for sub in ast.walk(node):
        targets = (
            sub.targets
            if isinstance(sub, ast.Assign)
            else [sub.target]
            if isinstance(sub, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        names |= {
            t.attr
            for t in targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
    return {name for name in names if _private(name)}


@cache
def verifiers_class_privates() -> frozenset[str]:
    """Every private name a class in the installed `verifiers.v1` defines (read off its source, not imported)."""
    found: set[str] = set()
    for path in (Path(verifiers.__file__).parent / "v1").rglob("*.py"):
        found |= {
            name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ClassDef)
            for name in _defined_privates(node)
        }
    return frozenset(found)


@cache
def _inherited_from_verifiers(cls: type) -> frozenset[str]:
    """The private names `cls` inherits from the verifiers classes in its MRO."""
    found: set[str] = set()
    for ancestor in cls.__mro__:
        if ancestor.__module__.split(".")[0] == "verifiers":
            statement = ast.parse(textwrap.dedent(inspect.getsource(ancestor))).body[0]
            assert isinstance(statement, ast.ClassDef)
            found |= _defined_privates(statement)
    return frozenset(found)


def _base_class(expr: ast.expr, bindings: dict[str, tuple[str, str | None]]) -> object:
    """The object a base-class expression names through the module's imports (None: not an imported name).

    Raises:
        ImportError, AttributeError: the import it names does not resolve (the check must not pass by not looking).
    """
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    chain: list[str] = []
    while isinstance(expr, ast.Attribute):
        chain.insert(0, expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in bindings:
        return None
    module, name = bindings[expr.id]
    found: object = importlib.import_module(module)
    if name is not None:
        found = getattr(found, name) if hasattr(found, name) else importlib.import_module(f"{module}.{name}")
    for part in chain:
        found = getattr(found, part)
    return found


def inherited_verifiers_privates(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Each class statement's name → the private names it inherits from verifiers (its bases resolved by
    importing what the module imports them from; a base defined earlier in the module counts through it)."""
    bindings: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            bindings |= {alias.asname or alias.name: (node.module, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            bindings |= {
                alias.asname or alias.name.split(".")[0]: (
                    alias.name if alias.asname else alias.name.split(".")[0],
                    None,
                )
                for alias in node.names
            }
    inherited: dict[str, frozenset[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names: set[str] = set()
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in inherited:
                    names |= inherited[base.id]
                elif isinstance(cls := _base_class(base, bindings), type):
                    names |= _inherited_from_verifiers(cls)
            inherited[node.name] = frozenset(names)
    return inherited


def own_privates(tree: ast.Module) -> set[str]:
    """Private names the module's classes define that no verifiers base of theirs does (Arena's own state)."""
    inherited = inherited_verifiers_privates(tree)
    return {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for name in _defined_privates(node) - inherited[node.name]
    }


def inherited_private_uses(source: str, own: set[str] | None = None) -> list[str]:
    """Where `source` uses a verifiers class's private attribute through an object rather than a module.

    In a class that inherits from verifiers: a method overriding an inherited private name, and any
    `<anything>._name` of one (`self._x`, `super()._x`, `runtime._x` on an instance the class made).
    Anywhere: `<not self>._name` of a name some verifiers class defines, unless Arena's own classes
    (`own`; default: this module's) define it too; such a shared name is left to the class rule.
    """
    tree = ast.parse(source)
    inherited = inherited_verifiers_privates(tree)
    own = own_privates(tree) if own is None else own
    found: list[str] = []
    judged: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and inherited[node.name]:
            found += [
                f"{node.name}.{item.name} (overridden)"
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in inherited[node.name]
            ]
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and sub.attr in inherited[node.name]:
                    judged.add(id(sub))
                    found.append(f"{node.name}: {ast.unparse(sub)}")
    defined = verifiers_class_privates()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and id(node) not in judged
            and node.attr in defined
            and node.attr not in own
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
        ):
            found.append(ast.unparse(node))
    return found


@pytest.mark.slow
def test_no_class_outside_the_seam_uses_a_private_name_it_inherits_from_verifiers() -> None:
    trees = {p: ast.parse(p.read_text()) for p in _sources()}
    own = {name for tree in trees.values() for name in own_privates(tree)}
    offenders = {str(p.relative_to(ROOT)): uses for p in trees if (uses := inherited_private_uses(p.read_text(), own))}
    assert offenders == {}, f"reach these through arena_kit/verifiers_seam (a seam base class or function): {offenders}"


DOCKER = "from verifiers.v1.runtimes.docker import DockerRuntime\n"


@pytest.mark.parametrize(
    "source",
    [
        DOCKER + "class R(DockerRuntime):\n    def boot(self):\n        self._container = 'vf-x'",
        DOCKER + "class R(DockerRuntime):\n    async def _read(self, path, max_bytes=None):\n        return b''",
        DOCKER
        + "class R(DockerRuntime):\n    @classmethod\n    def borrow(cls, c):\n        r = cls(c)\n        r._image_env = {}",
        DOCKER + "class R(DockerRuntime):\n    def env(self, e):\n        return super()._exec(e)",
        DOCKER + "class R(DockerRuntime):\n    pass\nclass S(R):\n    def f(self):\n        return self._proxy",
        "import verifiers.v1 as vf\nclass T(vf.Toolset):\n    def _with_state(self, fn):\n        return fn",
        "from verifiers.v1.runtimes import PrimeRuntime\nclass P(PrimeRuntime):\n    def __init__(self, c):\n        self._client = c",
        "def name(box):\n    return box._container",
    ],
)
def test_the_inheritance_check_catches_each_way_of_using_a_verifiers_private(source: str) -> None:
    assert inherited_private_uses(source)


def test_a_verifiers_subclass_keeps_its_own_privates_and_the_seam_names_pass() -> None:
    source = (
        DOCKER + "from arena_kit.verifiers_seam.docker_runtime import SeamDockerRuntime\n"
        "class R(SeamDockerRuntime):\n    def f(self):\n        self._api = None\n        return self.container, self._api\n"
        "class Plain:\n    def __init__(self):\n        self._container = 'mine'\n        self._container.upper()\n"
    )
    assert inherited_private_uses(source) == []


@pytest.mark.slow
def test_no_private_verifiers_name_outside_the_seam() -> None:
    offenders = {
        str(p.relative_to(ROOT)): names for p in _sources() if (names := private_verifiers_names(p.read_text()))
    }
    assert offenders == {}, f"move these into arena_kit/verifiers_seam: {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "from verifiers.v1.runtimes.base import _ENSURE_UV",
        "from verifiers.v1.mcp import server as s\ns._request_query('x')",
        "import verifiers.v1.mcp.launch as launch\nlaunch._PROBE = ''",
        "import verifiers\nverifiers.v1.mcp.launch._read_back_port",
    ],
)
def test_the_check_catches_each_way_of_reaching_a_private_name(source: str) -> None:
    assert private_verifiers_names(source)


def test_public_names_and_our_own_privates_pass_the_check() -> None:
    assert (
        private_verifiers_names(
            "import verifiers.v1 as vf\nfrom verifiers.v1.errors import SandboxError\n"
            "vf.Toolset\nself._api = None\n_x = 1"
        )
        == []
    )


def test_the_version_is_spelled_once_in_the_source_tree() -> None:
    spelled = [str(p.relative_to(ROOT)) for p in [*_sources(), *SEAM.rglob("*.py")] if '"0.4.0"' in p.read_text()]
    assert spelled == ["kit/arena_kit/verifiers_seam/__init__.py"]


def test_a_docker_runtime_without_a_relied_on_attribute_fails_naming_the_seam() -> None:
    from verifiers.v1.runtimes.docker import DockerConfig, DockerRuntime

    from arena_kit.errors import SeamError
    from arena_kit.verifiers_seam.docker_runtime import check_docker_runtime

    runtime = DockerRuntime(DockerConfig(image="x"))
    check_docker_runtime(runtime)
    del runtime._cut
    with pytest.raises(SeamError, match=r"_cut.*arena_kit\.verifiers_seam\.docker_runtime"):
        check_docker_runtime(runtime)
