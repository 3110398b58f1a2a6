"""The task secret: read from the environment or a 0600 file made once, keyed derivation, a fingerprint that names it."""

import os
import stat
from pathlib import Path

import pytest

from arena_kit import task_secret
from arena_kit.errors import SecretError


@pytest.fixture
def no_env_secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(task_secret.ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    return tmp_path / "arena" / "task-secret"


def test_the_file_is_made_once_private_and_reused(no_env_secret: Path) -> None:
    first = task_secret.derive("fl", 7)
    assert no_env_secret.exists()
    assert stat.S_IMODE(no_env_secret.stat().st_mode) == 0o600
    assert len(no_env_secret.read_bytes()) == task_secret.SECRET_BYTES
    task_secret._cached.cache_clear()
    assert task_secret.derive("fl", 7) == first


def test_another_secret_gives_other_tasks_and_another_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task_secret.ENV, "one")
    a, fa = task_secret.derive("fl", 7), task_secret.fingerprint()
    monkeypatch.setenv(task_secret.ENV, "two")
    b, fb = task_secret.derive("fl", 7), task_secret.fingerprint()
    assert a != b and fa != fb
    assert len(fa) == 12 and "one" not in fa


def test_namespace_and_seed_both_key_the_derivation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(task_secret.ENV, "one")
    values = {task_secret.derive(ns, seed) for ns in ("fl", "sm") for seed in range(50)}
    assert len(values) == 100


def test_bad_secrets_are_named(monkeypatch: pytest.MonkeyPatch, no_env_secret: Path) -> None:
    monkeypatch.setenv(task_secret.ENV, "")
    with pytest.raises(SecretError, match="empty"):
        task_secret.secret()
    monkeypatch.delenv(task_secret.ENV)
    no_env_secret.parent.mkdir(parents=True)
    no_env_secret.write_bytes(b"short")
    with pytest.raises(SecretError, match="delete it"):
        task_secret.secret()
    if os.geteuid() != 0:  # root reads a 000 file anyway
        no_env_secret.write_bytes(os.urandom(32))
        no_env_secret.chmod(0)
        task_secret._cached.cache_clear()
        with pytest.raises(SecretError, match="cannot read"):
            task_secret.secret()
