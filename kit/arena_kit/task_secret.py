"""The host's task secret: keys what a task hides, so an agent that recovers a task's public seed cannot regenerate it.

A task's seed is public (splits are seed ranges, the generators are open source). Whatever an agent
must not know (an incident's root cause, a migration's held-out rows) is drawn from
`derive(namespace, seed)`: HMAC-SHA256 of the host's secret over the namespace and the seed. The
secret lives on the host only: `ARENA_TASK_SECRET` (any text) if set, else a file of 32 random bytes
created once, mode 0600, at `$XDG_DATA_HOME/arena/task-secret` (`~/.local/share/arena/task-secret`).
Two hosts with different secrets generate different tasks from the same seeds; a gate's results
name the secret's `fingerprint()` so a resumed run never mixes them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import cache
from pathlib import Path

from arena_kit.errors import SecretError, SecretMismatch

__all__ = ["ENV", "SecretMismatch", "derive", "fingerprint", "require", "secret", "secret_path"]

ENV = "ARENA_TASK_SECRET"
SECRET_BYTES = 32


def secret_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "arena" / "task-secret"


def _read_or_create(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = secrets.token_bytes(SECRET_BYTES)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first: use theirs
            return _read_or_create(path)
        with os.fdopen(fd, "wb") as f:
            f.write(fresh)
        return fresh
    except OSError as e:
        raise SecretError(f"cannot read the task secret {path}: {e.strerror or e}; set {ENV} instead") from e
    if len(data) < 16:
        raise SecretError(
            f"the task secret {path} holds {len(data)} bytes (at least 16 expected); delete it to make a new one, or set {ENV}"
        )
    return data


@cache
def _cached(env_value: str | None, path: str) -> bytes:
    if env_value is not None:
        if not env_value:
            raise SecretError(f"{ENV} is set but empty")
        return env_value.encode()
    return _read_or_create(Path(path))


def secret() -> bytes:
    """The host's task secret (read once per process and value of `ARENA_TASK_SECRET`)."""
    return _cached(os.environ.get(ENV), str(secret_path()))


def derive(namespace: str, seed: int) -> int:
    """A 64-bit seed for what `namespace` hides in the task of public `seed`: no one without the secret can compute it."""
    digest = hmac.new(secret(), f"{namespace}:{seed}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def fingerprint() -> str:
    """12 hex characters that tell secrets apart without revealing them."""
    return hmac.new(secret(), b"arena task-secret fingerprint", hashlib.sha256).hexdigest()[:12]


def require(made_by: str, task: str) -> None:
    """Refuse to set up or score task `task`, made under the secret of fingerprint `made_by`, on a host holding another:
    what it hides would be drawn anew, and its result would belong to another task.

    Raises:
        SecretMismatch: the fingerprints differ (the message names both and how to set the right secret).
    """
    here = fingerprint()
    if made_by != here:
        raise SecretMismatch(
            f"task {task} was made under task secret {made_by or '(none)'}, this host holds {here}; "
            f"set {ENV} to the secret that made it"
        )
