"""Image specs and the builder's input checks (no engine needed)."""

import pytest

from arena.errors import PrerequisiteError
from arena.images import resolve_order
from arena.images.specs import env_images, specs
from arena.installed import environment_ids, image_dirs


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


def test_environment_images_come_from_installed_environments_that_ship_a_dockerfile():
    dirs = image_dirs()
    assert set(dirs) == set(environment_ids())  # every installed environment ships its box
    for env, folder in dirs.items():
        assert (folder / "Dockerfile").is_file() and folder.parent.name == env.replace("-", "_")
        assert f'arena.env="{env}"' in (folder / "Dockerfile").read_text()


def test_an_environment_named_like_a_platform_image_gets_no_image(tmp_path):
    assert list(env_images({"base": tmp_path, "env-a": tmp_path})) == ["env-a"]


def test_every_installed_environment_with_an_image_folder_is_built_from_the_harness_image():
    table = specs()
    assert list(table)[:3] == ["base", "harness", "network"]
    assert set(table) - {"base", "harness", "network"} == set(env_images()) and env_images()
    assert all(table[env].parent == "harness" for env in env_images())
