"""A self-contained Dockerfile context for one environment image, for a builder with no access to
our local images (Prime's image builder): one multi-stage Dockerfile, base → harness → env,
starting `FROM` a public Debian image, with every file the stages COPY beside it.

The stages are the image Dockerfiles verbatim; only their `FROM ${FROM_IMAGE}` line changes, the
build args become defaults (a remote builder passes none), and each stage ends with the two
labels our builder adds, in its order (`arena.content-hash` of the local image the stage repeats,
then `arena.managed`). So built `--base arena/rootfs:<hash>` here, every step is a layer-cache hit
and the result is the local env image itself; built elsewhere, its labels name the local build
it mirrors.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from arena.errors import UsageError
from arena.images.builder import resolve_order, rootfs_hash
from arena.images.context import fingerprint, prepare_context
from arena.images.rootfs import SUITE
from arena.images.specs import ImageSpec, env_images, specs

__all__ = ["PUBLIC_BASE", "stage_dockerfile", "write_context"]

PUBLIC_BASE = f"debian:{SUITE}-slim"
"""The release our debootstrap rootfs is (`rootfs.SUITE`), as a public image."""
_FROM = re.compile(r"^FROM\s+\$\{?FROM_IMAGE\}?\s*$", re.MULTILINE)
_ARG_FROM = re.compile(r"^ARG\s+FROM_IMAGE\s*\n", re.MULTILINE)
_PLAIN = re.compile(r"[A-Za-z0-9._:/@+-]+")


def stage_dockerfile(spec: ImageSpec, parent_stage: str, content_hash: str) -> str:
    """One image's Dockerfile as a stage `FROM <parent_stage> AS <name>`, ending with the builder's labels.

    Raises:
        UsageError: the Dockerfile does not start its one stage with `FROM ${FROM_IMAGE}`.
    """
    text = (spec.dockerfile_dir / "Dockerfile").read_text()
    if len(_FROM.findall(text)) != 1:
        raise UsageError(
            f"{spec.dockerfile_dir / 'Dockerfile'}: expected exactly one `FROM ${{FROM_IMAGE}}` line to rebase"
        )
    text = _ARG_FROM.sub("", text, count=1)
    text = _FROM.sub(f"FROM {parent_stage} AS {spec.name}", text, count=1).rstrip("\n")
    return f"{text}\nLABEL arena.content-hash={content_hash}\nLABEL arena.managed=true\n"


def write_context(env: str, out: Path, base: str = PUBLIC_BASE, ca_bundle: Path | None = None) -> Path:
    """Write the context of env image `env` to `out` (created; must not exist or be empty); returns
    the Dockerfile's path. `ca_bundle` is trusted by the harness stage's downloads only.

    Raises:
        UsageError: unknown environment, `out` not empty, `base` not a plain image reference, or
            two stages COPY different files under one name.
    """
    known = env_images()
    if env not in known:
        raise UsageError(f"unknown environment image {env!r}; known: {', '.join(known) or 'none'}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not an empty directory; choose a new one")
    if not _PLAIN.fullmatch(base):
        raise UsageError(f"--base {base!r} is not an image reference (e.g. {PUBLIC_BASE})")
    table = specs()
    chain = resolve_order([env])
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        stages, build_args, parent, parent_hash = [], {}, "${FROM_IMAGE}", rootfs_hash()
        for name in chain:
            spec = table[name]
            parent_hash = spec.content_hash(parent_hash, fingerprint(spec))
            with tempfile.TemporaryDirectory(prefix=f"arena-{name}-") as tmp:
                prepare_context(spec, Path(tmp), ca_bundle)
                _merge_files(Path(tmp), staging, name)
            stages.append(stage_dockerfile(spec, parent, parent_hash))
            build_args.update(spec.build_args)
            parent = name
        (staging / "Dockerfile").write_text(_header(env, base, build_args) + "\n".join(stages))
        staging.chmod(0o755)  # mkdtemp's 0700 would follow the directory to wherever it is uploaded
        if out.exists():
            out.rmdir()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out / "Dockerfile"


def _header(env: str, base: str, build_args: dict[str, str]) -> str:
    for key, value in build_args.items():
        if not _PLAIN.fullmatch(value):
            raise UsageError(f"build arg {key}={value!r} cannot be written as an ARG default")
    lines = [
        f"# arena/{env}, self-contained: `arena images context --env {env}` wrote this directory.",
        "# Build it with any Dockerfile builder (Prime's builder, `docker build .`); it needs the Debian",
        "# archive, PyPI and the npm registry, and no arena/* image. Change the start with",
        f"# --build-arg FROM_IMAGE=... (a Debian {SUITE} image).",
        f"ARG FROM_IMAGE={base}",
        *(f"ARG {key}={value}" for key, value in build_args.items()),
        "",
    ]
    return "\n".join(lines) + "\n"


def _merge_files(source: Path, target: Path, stage: str) -> None:
    """Move a stage's context files (all but its Dockerfile) into the shared context."""
    for item in sorted(source.iterdir()):
        if item.name == "Dockerfile":
            continue
        destination = target / item.name
        if destination.exists() or destination.is_symlink():
            if _digest(item) != _digest(destination):
                raise UsageError(f"stage {stage} and an earlier stage both COPY a different {item.name!r}; rename one")
            continue
        shutil.move(str(item), destination)


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for file in sorted([path] if path.is_file() else path.rglob("*")):
        if file.is_file() and not file.is_symlink():
            h.update(str(file.relative_to(path) if file != path else "").encode() + b"\0" + file.read_bytes())
    return h.hexdigest()
