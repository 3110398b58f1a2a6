"""Publishing without an engine: registry names, the lock file (as the prime configs read it), and the
errors that must stop `arena images publish` before it builds or pushes anything."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

import pytest

from arena.cli import main
from arena.errors import UsageError
from arena.images.lock import ImageLock, PublishedImage, read_lock, write_lock
from arena.images.publish import parse_registry
from arena_kit.box.image import BoxImageConfig, task_image

DIGEST = "sha256:" + "ab" * 32


def _entry(
    env: str = "schema-migration", registry: str = "127.0.0.1:5000/arena", digest: str = DIGEST
) -> PublishedImage:
    return PublishedImage(
        env=env,
        local_tag=f"arena/{env}:0123456789abcdef",
        content_hash="0123456789abcdef",
        registry=registry,
        ref=f"{registry}/{env}@{digest}",
        pushed_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "text", ["ghcr.io/you", "127.0.0.1:5000/arena", "localhost:5000", "docker.io/you/sub", "ghcr.io/you/"]
)
def test_a_registry_is_a_host_with_an_optional_namespace(text):
    assert parse_registry(text) == text.rstrip("/")


@pytest.mark.parametrize("text", ["you/arena", "https://ghcr.io/you", "ghcr.io/You", "ghcr.io/a//b", "arena"])
def test_a_registry_without_a_host_or_with_a_bad_namespace_is_refused(text):
    with pytest.raises(UsageError, match="--registry"):
        parse_registry(text)


def test_the_lock_round_trips_and_merging_replaces_only_the_published_envs(tmp_path):
    path = tmp_path / "sub" / "lock.json"
    write_lock(path, ImageLock().merged([_entry("schema-migration"), _entry("fault-localisation")]))
    newer = _entry("schema-migration", digest="sha256:" + "cd" * 32)
    write_lock(path, read_lock(path).merged([newer]))
    lock = read_lock(path)
    assert lock.images["schema-migration"] == newer
    assert lock.images["fault-localisation"] == _entry("fault-localisation")
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_prime_config_s_tasks_run_the_digest_the_lock_pins_for_their_environment(tmp_path):
    """The lock publish writes is the one the kit reads (`[env.taskset.task] image_lock` of configs/*-prime.toml)."""
    path = tmp_path / "lock.json"
    write_lock(
        path,
        ImageLock().merged([_entry("schema-migration"), _entry("fault-localisation", digest="sha256:" + "cd" * 32)]),
    )
    for env in ("schema-migration", "fault-localisation"):
        assert task_image(env, BoxImageConfig(image_lock=path)) == read_lock(path).images[env].ref
    with pytest.raises(ValueError, match="pins no image of 'demo-env'"):
        task_image("demo-env", BoxImageConfig(image_lock=path))


def test_a_failed_lock_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "lock.json"
    write_lock(path, ImageLock().merged([_entry()]))
    before = path.read_bytes()

    def refuse(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_lock(path, ImageLock())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["lock.json"]


@pytest.mark.parametrize(
    "field,value",
    [
        ("ref", "127.0.0.1:5000/arena/schema-migration:latest"),
        ("ref", f"127.0.0.1:5000/arena/other@{DIGEST}"),
        ("local_tag", "arena/schema-migration:latest"),
    ],
)
def test_the_lock_refuses_an_entry_that_is_not_its_image_by_digest(field, value):
    with pytest.raises(ValueError, match=field):
        PublishedImage(**{**_entry().model_dump(), field: value})


def test_a_corrupt_lock_is_a_worded_error(tmp_path):
    (tmp_path / "lock.json").write_text('{"version": 1, "images": {"x": {}}}')
    with pytest.raises(UsageError, match="not valid .*delete it"):
        read_lock(tmp_path / "lock.json")


def test_publish_of_an_unknown_env_exits_2_before_anything_else(tmp_path, capsys):
    code = main(
        [
            "images",
            "publish",
            "--registry",
            "127.0.0.1:1/arena",
            "--env",
            "no-such-env",
            "--lock",
            str(tmp_path / "l.json"),
        ]
    )
    assert code == 2
    assert "unknown environment image(s) no-such-env; known: " in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()


def test_publish_to_an_unreachable_registry_exits_2_and_writes_nothing(tmp_path, capsys):
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code = main(["images", "publish", "--registry", f"127.0.0.1:{port}/arena", "--lock", str(tmp_path / "l.json")])
    assert code == 2
    assert f"registry 127.0.0.1:{port}/arena is not reachable" in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()
