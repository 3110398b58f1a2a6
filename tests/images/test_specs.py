"""Image specs and the builder's input checks (no engine needed)."""

import pytest

from arena.errors import PrerequisiteError
from arena.images import resolve_order
from arena.images.specs import env_images, specs


def test_resolve_order_adds_parents_first():
    assert resolve_order(["schema-migration"]) == ["base", "harness", "schema-migration"]


def test_an_unknown_image_name_is_refused_with_the_known_names():
    with pytest.raises(PrerequisiteError, match="unknown image 'nope'; known: base, harness"):
        resolve_order(["nope"])


def test_the_content_hash_changes_with_the_parent_and_the_context():
    spec = specs()["harness"]
    assert spec.content_hash("p1", ["a"]) == spec.content_hash("p1", ["a"])
    assert spec.content_hash("p1", ["a"]) != spec.content_hash("p2", ["a"])
    assert spec.content_hash("p1", ["a"]) != spec.content_hash("p1", ["b"])


def test_environment_images_come_from_installed_environments_with_a_dockerfile(tmp_path):
    for name in ("env-a", "env-b", "base"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Dockerfile").write_text("FROM scratch\n")
    # env-c is installed but has no image folder; env-b has one but is not installed.
    assert env_images(["env-a", "env-c", "base"], dockerfiles=tmp_path) == ("env-a",)


def test_every_installed_environment_with_an_image_folder_is_built_from_the_harness_image():
    table = specs()
    assert list(table)[:3] == ["base", "harness", "network"]
    assert set(table) - {"base", "harness", "network"} == set(env_images()) and env_images()
    assert all(table[env].parent == "harness" for env in env_images())
