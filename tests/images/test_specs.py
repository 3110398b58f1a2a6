"""Image specs and the builder's input checks (no engine needed)."""

import pytest

from arena.errors import PrerequisiteError
from arena.images import resolve_order
from arena.images.specs import specs


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
