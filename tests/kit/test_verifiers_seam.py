"""verifiers' private names appear only in `arena_kit/verifiers_seam`, and the seam's guards name it when one is gone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = ("arena", "kit", "runtime_bench", "toolsets", "environments")
SEAM = ROOT / "kit" / "arena_kit" / "verifiers_seam"


def _sources() -> list[Path]:
    return [p for root in SOURCE_ROOTS for p in (ROOT / root).rglob("*.py")
            if ".venv" not in p.parts and "build" not in p.parts and SEAM not in p.parents]


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
                    found += [alias.name for part in alias.name.split(".") if part.startswith("_") and not part.startswith("__")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases and base.id not in {"self", "cls"}:
                found.append(ast.unparse(node))
    return found


@pytest.mark.slow
def test_no_private_verifiers_name_outside_the_seam() -> None:
    offenders = {str(p.relative_to(ROOT)): names for p in _sources() if (names := private_verifiers_names(p.read_text()))}
    assert offenders == {}, f"move these into arena_kit/verifiers_seam: {offenders}"


@pytest.mark.parametrize("source", [
    "from verifiers.v1.runtimes.base import _ENSURE_UV",
    "from verifiers.v1.mcp import server as s\ns._request_query('x')",
    "import verifiers.v1.mcp.launch as launch\nlaunch._PROBE = ''",
    "import verifiers\nverifiers.v1.mcp.launch._read_back_port",
])
def test_the_check_catches_each_way_of_reaching_a_private_name(source: str) -> None:
    assert private_verifiers_names(source)


def test_public_names_and_our_own_privates_pass_the_check() -> None:
    assert private_verifiers_names("import verifiers.v1 as vf\nfrom verifiers.v1.errors import SandboxError\n"
                                   "vf.Toolset\nself._api = None\n_x = 1") == []


def test_the_version_is_spelled_once_in_the_source_tree() -> None:
    spelled = [str(p.relative_to(ROOT)) for p in [*_sources(), *SEAM.rglob("*.py")] if '"0.4.0"' in p.read_text()]
    assert spelled == ["kit/arena_kit/verifiers_seam/__init__.py"]


def test_a_docker_runtime_without_a_relied_on_attribute_fails_naming_the_seam() -> None:
    from verifiers.v1.runtimes.docker import DockerConfig, DockerRuntime

    from arena_kit.verifiers_seam import SeamError
    from arena_kit.verifiers_seam.docker_runtime import check_docker_runtime

    runtime = DockerRuntime(DockerConfig(image="x"))
    check_docker_runtime(runtime)
    del runtime._cut
    with pytest.raises(SeamError, match=r"_cut.*arena_kit\.verifiers_seam\.docker_runtime"):
        check_docker_runtime(runtime)
