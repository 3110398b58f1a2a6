"""The registry-free starting point: a Debian minbase rootfs from debootstrap, imported as an image."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from arena.errors import ImageBuildError, PrerequisiteError

__all__ = ["DEFAULT_MIRROR", "SUITE", "build_rootfs_tar"]

SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def build_rootfs_tar(workdir: Path, mirror: str) -> Path:
    """debootstrap a minbase rootfs under `workdir` and pack it as a tar; returns the tar's path."""
    debootstrap = shutil.which("debootstrap")
    if not debootstrap:
        raise PrerequisiteError(
            "debootstrap is not installed (needed to build the base image without a registry). "
            "Fix: apt-get install debootstrap, or pass --base IMAGE if your engine has a base image."
        )
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=workdir))
    command = [debootstrap, "--variant=minbase", SUITE, str(rootfs), mirror]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageBuildError(
            "rootfs",
            " ".join(command),
            (proc.stdout + proc.stderr)[-3000:],
            f"check that the Debian mirror {mirror} is reachable (pass --mirror URL to use another), "
            "and that this user is root",
        )
    # Package caches make the image larger and are re-fetched by apt-get update anyway.
    for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_Packages"):
        for path in rootfs.glob(pattern):
            path.unlink()
    tar_path = workdir / "rootfs.tar"
    pack = ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar_path), "."]
    proc = subprocess.run(pack, capture_output=True, text=True)
    shutil.rmtree(rootfs, ignore_errors=True)
    if proc.returncode != 0:
        raise ImageBuildError("rootfs", " ".join(pack), proc.stderr, "check free disk space")
    return tar_path
