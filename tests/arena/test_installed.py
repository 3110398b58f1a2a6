"""Arena finds environments by their verifiers ids (`arena.environments` entry points), never by importing them."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from arena.errors import PolicyLoadError
from arena.installed import (
    ENVIRONMENTS_GROUP,
    declaration,
    entry_points,
    environment_ids,
    image_dirs,
)
from arena.policies import PolicyResolver
from arena_kit.contract.spec import ID_PATTERN
from arena_testkit.scaffolded import scaffolded


def test_installed_environments_are_found_by_id_without_importing_them() -> None:
    ids = environment_ids()
    assert ids == sorted({p.name for p in importlib.metadata.entry_points(group=ENVIRONMENTS_GROUP)})
    assert ids and all(ID_PATTERN.match(env_id) for env_id in ids)


def test_a_declared_environment_is_found_with_its_image_and_policies(tmp_path: Path) -> None:
    with scaffolded("installed-unit", tmp_path) as (names, folder):
        assert "installed-unit" in environment_ids()
        [point] = [p for p in entry_points() if p.name == "installed-unit"]
        spec = declaration(point)
        assert spec.id == "installed-unit"
        assert image_dirs()["installed-unit"] == folder / names.package / "image"
        resolver = PolicyResolver()
        assert resolver.environment_policies("installed-unit") == ["oracle", "exhaustive", "shortcut_peek"]
        assert callable(resolver.resolve("arena/installed-unit/oracle"))
    assert "installed-unit" not in environment_ids()


def test_only_the_environments_group_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def points(group: str) -> list[importlib.metadata.EntryPoint]:
        return [importlib.metadata.EntryPoint(group.replace(".", "-"), "some_env:ENVIRONMENT", group)]

    monkeypatch.setattr(importlib.metadata, "entry_points", points)
    assert entry_points() == (
        importlib.metadata.EntryPoint("arena-environments", "some_env:ENVIRONMENT", ENVIRONMENTS_GROUP),
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [("json:dumps", "must give an arena_kit.contract.Environment"), ("no_such_module_x:E", "failed to load")],
)
def test_a_broken_declaration_is_a_policy_load_error(value: str, says: str) -> None:
    with pytest.raises(PolicyLoadError, match=says):
        declaration(importlib.metadata.EntryPoint("broken-env", value, ENVIRONMENTS_GROUP))


def test_a_declaration_under_another_id_is_refused(tmp_path: Path) -> None:
    with scaffolded("named-unit", tmp_path):
        point = importlib.metadata.EntryPoint("other-name", "named_unit:ENVIRONMENT", ENVIRONMENTS_GROUP)
        with pytest.raises(PolicyLoadError, match="declares the id 'named-unit'"):
            declaration(point)
