"""Build Arena's images with no registry, each tagged by a content hash so an unchanged build is a no-op.

Order: rootfs (debootstrap, or `--base IMAGE`) → base → harness → network → per-environment images.
Every image is tagged `arena/<name>:<hash>` and `arena/<name>:latest` (plus any extra tag, e.g.
`localhost/verifiers-network:1`) and labelled `arena.managed=true`, which containers inherit.
Builds go through the Docker SDK, i.e. the engine's own builder: no buildx needed.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from docker.errors import APIError, ImageNotFound

from arena.engine import docker_client, image_exists
from arena.errors import ImageBuildError, PrerequisiteError
from arena.images.context import fingerprint, prepare_context
from arena.images.rootfs import DEFAULT_MIRROR, SUITE, build_rootfs_tar
from arena.images.specs import ImageSpec, specs
from arena_kit.contract.spec import image_tag

__all__ = ["BuildResult", "build_images", "image_ref", "resolve_order", "rootfs_hash"]

ROOTFS_RECIPE = f"debootstrap --variant=minbase {SUITE} v1"
HINTS = {
    "base": "the build container must reach the Debian mirror (check DNS/NAT on the docker0 bridge)",
    "harness": (
        "the build container must reach PyPI and the npm registry; behind a TLS-intercepting "
        "proxy pass --ca-bundle PATH (or set ARENA_CA_BUNDLE)"
    ),
}
Progress = Callable[[str], None]


@dataclass(frozen=True)
class BuildResult:
    name: str
    tag: str
    content_hash: str
    built: bool
    """False when an image with this content hash already existed (a no-op)."""
    seconds: float
    size_bytes: int


def image_ref(name: str) -> str:
    """The stable tag: `arena/<name>:latest`, the image an environment's tasks run in (`arena_kit.box.image`)."""
    return image_tag(name)


def rootfs_hash() -> str:
    """The content hash of our debootstrap rootfs (its tag is `arena/rootfs:<hash>`) and so the
    first parent hash in the chain of every image built without `--base`."""
    return hashlib.sha256(ROOTFS_RECIPE.encode()).hexdigest()[:16]


def resolve_order(names: Iterable[str]) -> list[str]:
    """The requested images plus their ancestors, parents first."""
    table = specs()
    wanted: set[str] = set()
    for name in names:
        if name not in table:
            raise PrerequisiteError(f"unknown image {name!r}; known: {', '.join(table)}")
        current: str | None = name
        while current:
            wanted.add(current)
            current = table[current].parent
    return [n for n in table if n in wanted]


def build_images(
    names: Iterable[str] | None = None,
    *,
    base: str | None = None,
    rebuild: bool = False,
    mirror: str = DEFAULT_MIRROR,
    ca_bundle: Path | None = None,
    progress: Progress = print,
) -> list[BuildResult]:
    """Build (or find) each requested image (default: all) and its ancestors; one result per image."""
    table = specs()
    order = resolve_order(table if names is None else names)
    results: dict[str, BuildResult] = {}
    from_image, from_hash = _starting_image(base, mirror, rebuild, progress)
    for index, name in enumerate(order, 1):
        spec = table[name]
        parent_ref, parent_hash = (
            (results[spec.parent].tag, results[spec.parent].content_hash) if spec.parent else (from_image, from_hash)
        )
        results[name] = _build_one(spec, parent_ref, parent_hash, rebuild, ca_bundle, progress)
        r = results[name]
        state = "built" if r.built else "up to date"
        progress(f"[{index}/{len(order)}] {name}: {state} {r.tag} ({r.size_bytes / 1e6:.0f} MB, {r.seconds:.1f}s)")
    return [results[n] for n in order]


def _starting_image(base: str | None, mirror: str, rebuild: bool, progress: Progress) -> tuple[str, str]:
    """The FROM of the base image: a user-given image, or our debootstrap rootfs."""
    client = docker_client()
    if base:
        try:
            image = client.images.get(base)
        except ImageNotFound:
            raise PrerequisiteError(
                f"--base image {base!r} is not in the engine; pull or load it first, or omit --base "
                "to build from a Debian debootstrap rootfs"
            ) from None
        return base, str(image.id)
    content_hash = rootfs_hash()
    tag = f"arena/rootfs:{content_hash}"
    if not rebuild and image_exists(tag):
        return tag, content_hash
    progress(f"[0] rootfs: debootstrap {SUITE} minbase from {mirror} (about 30 s)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="arena-rootfs-") as tmp:
        tar_path = build_rootfs_tar(Path(tmp), mirror)
        try:
            client.api.import_image_from_file(
                str(tar_path),
                repository="arena/rootfs",
                tag=content_hash,
                changes=['LABEL arena.managed="true" arena.image="rootfs"', 'CMD ["bash"]'],
            )
        except APIError as exc:
            raise ImageBuildError(
                "rootfs", "docker import rootfs.tar", str(exc), "check the engine's log and free disk space"
            ) from exc
    progress(f"[0] rootfs: imported {tag} in {time.monotonic() - started:.1f}s")
    return tag, content_hash


def _build_one(
    spec: ImageSpec, parent_ref: str, parent_hash: str, rebuild: bool, ca_bundle: Path | None, progress: Progress
) -> BuildResult:
    client = docker_client()
    started = time.monotonic()
    content_hash = spec.content_hash(parent_hash, fingerprint(spec))
    tag = f"arena/{spec.name}:{content_hash}"
    built = rebuild or not image_exists(tag)
    if built:
        progress(f"    {spec.name}: building {tag} FROM {parent_ref}")
        with tempfile.TemporaryDirectory(prefix=f"arena-{spec.name}-") as tmp:
            prepare_context(spec, Path(tmp), ca_bundle)
            _docker_build(spec, Path(tmp), tag, {**spec.build_args, "FROM_IMAGE": parent_ref}, content_hash, progress)
    image = client.images.get(tag)
    for extra in (image_ref(spec.name), *spec.extra_tags):
        repository, _, version = extra.rpartition(":")
        image.tag(repository, version)
    return BuildResult(spec.name, tag, content_hash, built, time.monotonic() - started, image.attrs["Size"])


def _docker_build(
    spec: ImageSpec, context: Path, tag: str, build_args: dict[str, str], content_hash: str, progress: Progress
) -> None:
    client = docker_client()
    tail: list[str] = []
    stream = client.api.build(
        path=str(context),
        tag=tag,
        buildargs=build_args,
        rm=True,
        forcerm=True,
        decode=True,
        labels={"arena.managed": "true", "arena.content-hash": content_hash},
    )
    for chunk in stream:
        if "error" in chunk:
            raise ImageBuildError(
                spec.name,
                _last_step(tail),
                chunk["error"] + "\n" + "".join(tail[-25:]),
                HINTS.get(spec.name, "see the output above"),
            )
        line = chunk.get("stream", "")
        if line:
            tail.append(line)
            if line.startswith("Step "):
                progress(f"    {spec.name}: {line.strip()[:160]}")


def _last_step(lines: list[str]) -> str:
    steps = [line.strip() for line in lines if line.startswith("Step ")]
    return steps[-1] if steps else "docker build"
