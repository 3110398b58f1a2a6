"""`arena images context`: a Dockerfile context that needs no arena/* image, and that, built here on
our rootfs, reproduces the local env image step for step (every layer a cache hit, the same id)."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from arena.cli import main
from arena.errors import UsageError
from arena.images import specs as specs_module
from arena.images.builder import rootfs_hash
from arena.images.specs import ImageSpec, env_images
from arena.images.standalone import PUBLIC_BASE, stage_dockerfile, write_context


@pytest.fixture(scope="module")
def contexts(tmp_path_factory):
    root = tmp_path_factory.mktemp("contexts")
    for env in env_images():
        assert main(["images", "context", "--env", env, "--out", str(root / env)]) == 0
    return root


@pytest.mark.slow
def test_the_context_starts_from_public_debian_and_names_no_local_image(contexts):
    for env in env_images():
        dockerfile = (contexts / env / "Dockerfile").read_text()
        assert f"ARG FROM_IMAGE={PUBLIC_BASE}\n" in dockerfile
        froms = re.findall(r"^FROM (\S+) AS (\S+)$", dockerfile, re.MULTILINE)
        assert froms == [("${FROM_IMAGE}", "base"), ("base", "harness"), ("harness", env)]
        assert "arena/" not in "".join(line for line in dockerfile.splitlines() if not line.startswith(("#", "LABEL")))


@pytest.mark.slow
def test_every_file_the_context_copies_is_in_it_and_every_arg_has_a_default(contexts):
    for env in env_images():
        dockerfile = (contexts / env / "Dockerfile").read_text()
        sources = [src for line in re.findall(r"^COPY (.+)$", dockerfile, re.MULTILINE) for src in line.split()[:-1]]
        assert sources and all((contexts / env / src).exists() for src in sources), sources
        defaults = set(re.findall(r"^ARG (\w+)=", dockerfile, re.MULTILINE))
        assert set(re.findall(r"^ARG (\w+)$", dockerfile, re.MULTILINE)) <= defaults
        assert (contexts / env / "vf-node" / "bin" / "npm").is_symlink()  # the Node tree is whole


def test_the_context_refuses_a_non_empty_out_dir_and_an_unknown_env(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(UsageError, match="not an empty directory"):
        write_context("schema-migration", tmp_path / "full")
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["x"]
    with pytest.raises(UsageError, match="unknown environment image 'nope'"):
        write_context("nope", tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_a_dockerfile_that_does_not_start_from_the_parent_arg_is_refused(tmp_path, monkeypatch):
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "Dockerfile").write_text("FROM debian:bookworm\nRUN true\n")
    monkeypatch.setattr(specs_module, "DOCKERFILES", tmp_path)
    with pytest.raises(UsageError, match="expected exactly one `FROM \\$\\{FROM_IMAGE\\}`"):
        stage_dockerfile(ImageSpec("odd", parent="harness"), "harness", "0" * 16)


@pytest.mark.docker
def test_built_on_our_rootfs_the_context_reproduces_the_local_env_image(images, tmp_path):
    from arena.engine import docker_client, untag_image

    out = tmp_path / "ctx"
    assert (
        main(
            [
                "images",
                "context",
                "--env",
                "schema-migration",
                "--out",
                str(out),
                "--base",
                f"arena/rootfs:{rootfs_hash()}",
            ]
        )
        == 0
    )
    tag = f"arena-test/context:{uuid.uuid4().hex[:12]}"
    began = time.monotonic()
    steps = [
        chunk.get("stream", "")
        for chunk in docker_client().api.build(path=str(out), tag=tag, rm=True, forcerm=True, decode=True)
    ]
    seconds = time.monotonic() - began
    try:
        assert docker_client().images.get(tag).id == docker_client().images.get(images["schema-migration"]).id, "".join(
            steps
        )[-3000:]
    finally:
        untag_image(tag)
    print(f"\ncontext build on the rootfs: {seconds:.1f}s, {sum('Using cache' in s for s in steps)} cached steps")
