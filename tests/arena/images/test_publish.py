"""Publishing without an engine: registry names, the lock file, the prime-config rewrite, and the
errors that must stop `arena images publish` before it builds or pushes anything."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

import pytest

from arena.cli import main
from arena.errors import UsageError
from arena.images.lock import ImageLock, PublishedImage, read_lock, write_lock
from arena.images.prime_configs import rewrite_runtime_image
from arena.images.publish import parse_registry

DIGEST = "sha256:" + "ab" * 32
CONFIG = '''# a prime config
model = "m"

[env.agent.runtime]  # where the box runs
type = "prime"
image = "arena/schema-migration:latest"   # replaced by publish
cpu = 2

[env.taskset]
id = "schema-migration"
image = "not-this-one"
'''


def _entry(env: str = "schema-migration", registry: str = "127.0.0.1:5000/arena", digest: str = DIGEST) -> PublishedImage:
    return PublishedImage(env=env, local_tag=f"arena/{env}:0123456789abcdef", content_hash="0123456789abcdef",
                          registry=registry, ref=f"{registry}/{env}@{digest}", pushed_at=datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("text", ["ghcr.io/you", "127.0.0.1:5000/arena", "localhost:5000", "docker.io/you/sub", "ghcr.io/you/"])
def test_a_registry_is_a_host_with_an_optional_namespace(text):
    assert parse_registry(text) == text.rstrip("/")


@pytest.mark.parametrize("text", ["you/arena", "https://ghcr.io/you", "ghcr.io/You", "ghcr.io/a//b", "arena"])
def test_a_registry_without_a_host_or_with_a_bad_namespace_is_refused(text):
    with pytest.raises(UsageError, match="--registry"):
        parse_registry(text)


def test_the_rewrite_changes_only_the_runtime_image_value():
    new = rewrite_runtime_image(CONFIG, f"127.0.0.1:5000/arena/schema-migration@{DIGEST}", "c.toml")
    changed = [(a, b) for a, b in zip(CONFIG.splitlines(), new.splitlines(), strict=True) if a != b]
    assert changed == [('image = "arena/schema-migration:latest"   # replaced by publish',
                        f'image = "127.0.0.1:5000/arena/schema-migration@{DIGEST}"   # replaced by publish')]


@pytest.mark.parametrize("text,found", [
    (CONFIG.replace('image = "arena/schema-migration:latest"   # replaced by publish\n', ""), 0),
    (CONFIG.replace("cpu = 2", 'image = "x"'), 2),
    ('[env.agent]\nruntime = { type = "prime", image = "x" }\n', 0),
])
def test_a_config_without_exactly_one_runtime_image_line_is_refused(text, found):
    with pytest.raises(UsageError, match=rf"c.toml: expected exactly one .* found {found}"):
        rewrite_runtime_image(text, "r@" + DIGEST, "c.toml")


def test_a_rewrite_that_toml_would_read_differently_is_refused():
    in_a_string = '[env.agent.runtime]\ntype = "prime"\nnote = """\nimage = "looks like the line"\n"""\n'
    with pytest.raises(UsageError, match="not the \\[env.agent.runtime\\] image TOML reads"):
        rewrite_runtime_image(in_a_string, "r@" + DIGEST, "c.toml")
    with pytest.raises(UsageError, match="not valid TOML"):
        rewrite_runtime_image('[env.agent.runtime]\nimage = "a"\nbroken =\n', "r@" + DIGEST, "c.toml")


def test_the_lock_round_trips_and_merging_replaces_only_the_published_envs(tmp_path):
    path = tmp_path / "sub" / "lock.json"
    write_lock(path, ImageLock().merged([_entry("schema-migration"), _entry("fault-localisation")]))
    newer = _entry("schema-migration", digest="sha256:" + "cd" * 32)
    write_lock(path, read_lock(path).merged([newer]))
    lock = read_lock(path)
    assert lock.images["schema-migration"] == newer
    assert lock.images["fault-localisation"] == _entry("fault-localisation")
    assert oct(path.stat().st_mode & 0o777) == "0o644"


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


@pytest.mark.parametrize("field,value", [("ref", "127.0.0.1:5000/arena/schema-migration:latest"),
                                         ("ref", f"127.0.0.1:5000/arena/other@{DIGEST}"),
                                         ("local_tag", "arena/schema-migration:latest")])
def test_the_lock_refuses_an_entry_that_is_not_its_image_by_digest(field, value):
    with pytest.raises(ValueError, match=field):
        PublishedImage(**{**_entry().model_dump(), field: value})


def test_a_corrupt_lock_is_a_worded_error(tmp_path):
    (tmp_path / "lock.json").write_text('{"version": 1, "images": {"x": {}}}')
    with pytest.raises(UsageError, match="not valid .*delete it"):
        read_lock(tmp_path / "lock.json")


def test_publish_of_an_unknown_env_exits_2_before_anything_else(tmp_path, capsys):
    code = main(["images", "publish", "--registry", "127.0.0.1:1/arena", "--env", "no-such-env", "--lock", str(tmp_path / "l.json")])
    assert code == 2
    assert "unknown environment image(s) no-such-env; known: " in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()


def test_publish_to_an_unreachable_registry_exits_2_and_writes_nothing(tmp_path, capsys):
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "schema-migration-bash-prime.toml").write_text(CONFIG)
    code = main(["images", "publish", "--registry", f"127.0.0.1:{port}/arena", "--lock", str(tmp_path / "l.json"),
                 "--update-configs", "--configs", str(configs)])
    assert code == 2
    assert f"registry 127.0.0.1:{port}/arena is not reachable" in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()
    assert (configs / "schema-migration-bash-prime.toml").read_text() == CONFIG


def test_publish_checks_every_prime_config_before_it_pushes(tmp_path, capsys):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "schema-migration-codex-prime.toml").write_text('[env.agent.runtime]\ntype = "prime"\n')
    code = main(["images", "publish", "--registry", "127.0.0.1:1/arena", "--lock", str(tmp_path / "l.json"),
                 "--update-configs", "--configs", str(configs)])
    assert code == 2
    assert "schema-migration-codex-prime.toml: expected exactly one" in capsys.readouterr().err

