"""The user database a lean box sees: its image's `/etc/passwd` and `/etc/group`, with the agent made the box's own uid.

The design decision: each box's agent runs as a uid leased for that box (`arena_kit.runtimes.agent_uids`),
and whatever in the box looks the agent up (`id -un`, a shell's prompt, node's `os.userInfo`, verifiers'
own check that the harness runs as its `agent_user`) must find it by that uid. The root of a lean box is
read-only, so the two files are bind-mounted read-only over the image's: written on this host beside the
uid's lease, from the image's own files (read once per image through a container that is created and
removed, never started). The engine resolves a user *name* from the image's files on the host, not from
the box's mounts, so the runtime runs every exec of the agent by its numeric uid and gid.
"""

from __future__ import annotations

import io
import tarfile
import threading
from pathlib import Path
from typing import Any

from arena_kit.runtimes.agent_uids import passwd_for

__all__ = ["USER_FILES", "image_users", "user_binds"]

USER_FILES = ("/etc/passwd", "/etc/group")
_cache: dict[str, tuple[str, str]] = {}
_lock = threading.Lock()


def _archived(api: Any, container: str, path: str) -> str:
    stream, _ = api.get_archive(container, path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.next()
        data = archive.extractfile(member) if member is not None else None
        if data is None:
            raise ValueError(f"the image's {path} is not a regular file")
        return data.read().decode()


def image_users(api: Any, image_id: str, labels: dict[str, str]) -> tuple[str, str]:
    """The `/etc/passwd` and `/etc/group` texts of image `image_id`, read once per image and process
    through a created (never started) container carrying `labels`, which is removed at once.

    Raises:
        docker.errors.DockerException and the transport's errors: the engine failed a call.
        ValueError: a file is not a regular file in the image.
    """
    with _lock:
        if image_id in _cache:
            return _cache[image_id]
    container = api.create_container(image_id, entrypoint=["true"], command=[], labels=labels, network_disabled=True)[
        "Id"
    ]
    try:
        found = (_archived(api, container, USER_FILES[0]), _archived(api, container, USER_FILES[1]))
    finally:
        api.remove_container(container, force=True)
    with _lock:
        _cache[image_id] = found
    return found


def user_binds(users: tuple[str, str], user: str, uid: int, directory: Path) -> list[str]:
    """Engine binds (`source:target:ro`) of the image's user files with `user` made `uid`, written in `directory`.

    Raises:
        ValueError: the image has no such user.
        OSError: the files could not be written.
    """
    passwd, group = passwd_for(*users, user, uid)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    binds = []
    for target, text in zip(USER_FILES, (passwd, group), strict=True):
        source = directory / Path(target).name
        partial = source.with_name(f"{source.name}.tmp")
        partial.write_text(text)
        partial.chmod(0o644)
        partial.replace(source)
        binds.append(f"{source}:{target}:ro")
    return binds
