"""Every schema_migration module states its public names in `__all__`, and each of them exists."""

import importlib
import pkgutil

import pytest
import schema_migration

MODULES = sorted(info.name for info in pkgutil.walk_packages(schema_migration.__path__, "schema_migration."))


def test_every_module_is_found():
    assert {"schema_migration.grade", "schema_migration.score", "schema_migration.families.base"} <= set(MODULES)
    assert len(MODULES) >= 25


@pytest.mark.parametrize("name", MODULES)
def test_the_module_declares_its_public_names_and_each_exists(name):
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list) and exported, f"{name} has no __all__"
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    assert not [n for n in exported if n.startswith("_")], f"{name}.__all__ lists a private name"
    assert not [n for n in exported if not hasattr(module, n)], f"{name}.__all__ lists a missing name"
