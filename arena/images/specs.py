"""What each Arena image is: its Dockerfile folder, parent, build args and content-hash inputs.

The platform images (`base`, `harness`, `network`) are Arena's own; the environment images are not
named here: each installed environment (an `arena.environments` entry point, see `arena.installed`)
whose package ships `image/Dockerfile` gets an image of that name, built FROM `harness`; the
platform images' Dockerfiles are in `dockerfiles/<name>/` beside this module.
Versions of everything the harness layer bakes are read from the installed verifiers (never copied
by hand), so a verifiers upgrade changes the harness image's hash and forces a rebuild.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from arena.installed import image_dirs

__all__ = [
    "DOCKERFILES",
    "NETWORK_TAG",
    "PLATFORM_IMAGES",
    "ImageSpec",
    "env_images",
    "harness_versions",
    "image_names",
    "runner_scripts",
    "specs",
]

DOCKERFILES = Path(__file__).resolve().parent / "dockerfiles"
"""Shipped inside the package (package data), so an installed wheel builds without a checkout."""
NETWORK_TAG = "localhost/verifiers-network:1"
"""The tag verifiers' docker runtime looks for before it would build its helper from alpine."""
PLATFORM_IMAGES = ("base", "harness", "network")


def env_images(dirs: Mapping[str, Path] | None = None) -> dict[str, Path]:
    """Environment id → its Dockerfile's folder, sorted by id (default: the installed environments
    that ship one); an id that clashes with a platform image is left out."""
    found = image_dirs() if dirs is None else dirs
    return {env: found[env] for env in sorted(found) if env not in PLATFORM_IMAGES}


def image_names() -> tuple[str, ...]:
    """Every image Arena builds, parents first."""
    return (*PLATFORM_IMAGES, *env_images())


@dataclass(frozen=True)
class ImageSpec:
    name: str
    parent: str | None
    """Name of the Arena image this one is built FROM (None: the rootfs or --base image)."""
    build_args: dict[str, str] = field(default_factory=dict)
    extra_tags: tuple[str, ...] = ()
    source: Path | None = None
    """Folder of the Dockerfile (None: Arena's own, `dockerfiles/<name>`)."""

    @property
    def dockerfile_dir(self) -> Path:
        return self.source or DOCKERFILES / self.name

    def content_hash(self, parent_hash: str, context_fingerprint: list[str]) -> str:
        """sha256 of the Dockerfile, build args, parent and context: equal hash, equal image."""
        h = hashlib.sha256()
        for part in (
            self.name,
            (self.dockerfile_dir / "Dockerfile").read_text(),
            repr(sorted(self.build_args.items())),
            parent_hash,
            *context_fingerprint,
        ):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:16]


def harness_versions() -> dict[str, str]:
    """The versions verifiers' harnesses check at setup, read from the installed package."""
    from verifiers.v1.harnesses import node
    from verifiers.v1.harnesses.claude_code import harness as claude
    from verifiers.v1.harnesses.codex import harness as codex

    return {
        "NODE_VERSION": node.NODE_VERSION,
        "CLAUDE_VERSION": claude.ClaudeCodeHarnessConfig().version,
        "CLAUDE_ACP_VERSION": claude.ACP_VERSION,
        "CODEX_VERSION": codex.CodexHarnessConfig().version,
        "CODEX_ACP_VERSION": codex.ACP_VERSION,
    }


def runner_scripts() -> dict[str, bytes]:
    """`<sha256>.py` → source of each PEP 723 runner verifiers writes to /tmp/vf-scripts."""
    from verifiers.v1.acp import ACP_SOURCE
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    scripts = {}
    for source in (CHAT_PROGRAM_SOURCE, ACP_SOURCE):
        data = source.encode()
        scripts[f"{hashlib.sha256(data).hexdigest()}.py"] = data
    return scripts


def specs() -> dict[str, ImageSpec]:
    """Every image's spec, parents first (the build order)."""
    return {
        "base": ImageSpec("base", parent=None),
        "harness": ImageSpec("harness", parent="base", build_args=harness_versions()),
        "network": ImageSpec("network", parent="base", extra_tags=(NETWORK_TAG,)),
        **{env: ImageSpec(env, parent="harness", source=folder) for env, folder in env_images().items()},
    }
