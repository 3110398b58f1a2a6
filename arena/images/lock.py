"""The lock file of published images: env image → the digest ref configs use, written atomically.

One entry per environment image; publishing some environments replaces their entries and keeps
the others, so the file always names, for every env, the last digest that reached a registry.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from arena.errors import UsageError

__all__ = ["DEFAULT_LOCK", "ImageLock", "PublishedImage", "read_lock", "write_atomically", "write_lock"]

DEFAULT_LOCK = Path("configs") / "images.lock.json"
"""Next to the configs whose `image = "<repo>@sha256:…"` lines it feeds."""
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class PublishedImage(BaseModel):
    """One environment image as it was pushed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: str
    """The environment image's name, e.g. `schema-migration`."""
    local_tag: str
    """The content-hash tag it was pushed from, e.g. `arena/schema-migration:6a3d45ccdac005d0`."""
    content_hash: str
    registry: str
    """`HOST[:PORT][/NAMESPACE]` as given to `arena images publish`."""
    ref: str
    """What a config's `image` takes: `<registry>/<env>@sha256:<64 hex>`."""
    pushed_at: datetime

    @property
    def digest(self) -> str:
        return self.ref.rpartition("@")[2]

    @model_validator(mode="after")
    def _ref_is_this_image_by_digest(self) -> PublishedImage:
        repository, at, digest = self.ref.rpartition("@")
        if not at or repository != f"{self.registry}/{self.env}" or not DIGEST.fullmatch(digest):
            raise ValueError(f"ref {self.ref!r} is not {self.registry}/{self.env}@sha256:<64 hex>")
        if not self.local_tag.endswith(f":{self.content_hash}"):
            raise ValueError(f"local_tag {self.local_tag!r} does not carry content_hash {self.content_hash!r}")
        return self


class ImageLock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    images: dict[str, PublishedImage] = {}
    """env name → its last published image."""

    def merged(self, published: list[PublishedImage]) -> ImageLock:
        """This lock with each published env's entry replaced (or added)."""
        return ImageLock(images={**self.images, **{p.env: p for p in published}})


def read_lock(path: Path) -> ImageLock:
    """The lock at `path` (empty when the file does not exist).

    Raises:
        UsageError: the file exists but is not a valid lock.
    """
    if not path.exists():
        return ImageLock()
    try:
        return ImageLock.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise UsageError(
            f"image lock {path} is not valid ({exc.error_count()} problem(s)): {exc.errors()[0]['msg']}; "
            "fix or delete it, then re-run `arena images publish`"
        ) from None


def write_lock(path: Path, lock: ImageLock) -> None:
    write_atomically(path, lock.model_dump_json(indent=2) + "\n")


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename: a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
