# mypy: disallow-subclassing-any=False
"""Which image a task's box runs: its environment's own (`arena/<id>:latest`), or the digest its published image is locked at.

The image comes from the environment, never from an eval config: verifiers puts a task's
`TaskData.image` in place of the runtime's `image` on docker and prime
(`verifiers.v1.utils.compile.resolve_runtime_config`), and Arena's lean docker path resolves a
rollout's runtime the same way (`arena_kit.verifiers_seam.env`), so one config serves every
environment. A config may point the tasks elsewhere through the task config: `image` (one ref, a
test's or a bench's) or `image_lock` (the lock `arena images publish` writes: the environment's
entry, a digest ref, which is what a remote runtime such as prime must pull).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import verifiers.v1 as vf
from pydantic import model_validator

from arena_kit.contract.spec import image_tag

__all__ = ["BoxImageConfig", "locked_image", "task_image"]

_DIGEST_REF = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")


class BoxImageConfig(vf.TaskConfig):  # verifiers ships no types
    """Task config knobs that choose the box's image (default: the environment's own, `image_tag`)."""

    image: str | None = None
    """Run every task in this image instead of the environment's own."""
    image_lock: Path | None = None
    """Run every task in the image this lock file (`arena images publish`'s, e.g.
    `configs/images.lock.json`; relative paths from the working directory) pins for the environment."""

    @model_validator(mode="after")
    def _one_source(self) -> BoxImageConfig:
        if self.image is not None and self.image_lock is not None:
            raise ValueError(f"set `image` ({self.image!r}) or `image_lock` ({str(self.image_lock)!r}), not both")
        return self


def locked_image(lock: Path, env_id: str) -> str:
    """The digest ref `lock` pins for `env_id`'s image (`{"images": {env_id: {"ref": ...}}}`).

    Raises:
        ValueError: the lock is missing or unreadable, holds no entry for `env_id`, or its ref is not by digest.
    """
    publish = f"`arena images publish --registry HOST/NAMESPACE --env {env_id}` writes it"
    try:
        entry = json.loads(lock.read_text())["images"].get(env_id)
    except FileNotFoundError:
        raise ValueError(f"image lock {lock} (from {Path.cwd()}) does not exist: {publish}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"image lock {lock} is not readable ({type(exc).__name__}: {exc}): {publish}") from None
    if not isinstance(entry, dict):
        raise ValueError(f"image lock {lock} pins no image of {env_id!r} (it is not published): {publish}")
    ref = entry.get("ref")
    if not isinstance(ref, str) or not _DIGEST_REF.match(ref):
        raise ValueError(
            f"image lock {lock}: the {env_id!r} entry's ref {ref!r} is not <repository>@sha256:<64 hex>: {publish}"
        )
    return ref


def task_image(env_id: str, config: BoxImageConfig) -> str:
    """The image `env_id`'s tasks run in under `config`: its `image`, else the ref its `image_lock` pins,
    else the environment's own (`arena/<id>:latest`, which `arena images build` tags).

    Raises:
        ValueError: see `locked_image`.
    """
    if config.image is not None:
        return config.image
    if config.image_lock is not None:
        return locked_image(config.image_lock, env_id)
    return image_tag(env_id)
