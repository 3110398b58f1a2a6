"""Arena finds environments by their verifiers ids (entry points), never by importing them: declared ones and older ones alike."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from arena.errors import PolicyLoadError
from arena.installed import (
    ENTRY_POINT_GROUP,
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
    assert ids == sorted(
        {p.name for g in (ENVIRONMENTS_GROUP, ENTRY_POINT_GROUP) for p in importlib.metadata.entry_points(group=g)}
    )
    assert ids and all(ID_PATTERN.match(env_id) for env_id in ids)


def test_a_declared_environment_is_found_with_its_image_and_policies(tmp_path: Path) -> None:
    with scaffolded("installed-unit", tmp_path) as (names, folder):
        assert "installed-unit" in environment_ids()
        [point] = [p for p in entry_points() if p.name == "installed-unit"]
        spec = declaration(point)
        assert spec is not None and spec.id == "installed-unit"
        assert image_dirs()["installed-unit"] == folder / names.package / "image"
        resolver = PolicyResolver()
        assert resolver.environment_policies("installed-unit") == ["oracle", "exhaustive", "shortcut_peek"]
        assert callable(resolver.resolve("arena/installed-unit/oracle"))
    assert "installed-unit" not in environment_ids()


def test_an_id_in_both_groups_is_taken_from_the_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    new = importlib.metadata.EntryPoint("demo-env", "demo_env:ENVIRONMENT", ENVIRONMENTS_GROUP)
    old = importlib.metadata.EntryPoint("demo-env", "demo_env.policies:POLICIES", ENTRY_POINT_GROUP)
    other = importlib.metadata.EntryPoint("old-env", "old_env.policies:POLICIES", ENTRY_POINT_GROUP)

    def points(group: str) -> list[importlib.metadata.EntryPoint]:
        return [p for p in (new, old, other) if p.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", points)
    assert entry_points() == (new, other)


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
