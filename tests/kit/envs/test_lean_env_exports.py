"""Both environments opt in to the lean path by exporting `LeanEnv`, lazily: importing the package
still imports no verifiers, and verifiers resolves the env class and its `docker` knob by taskset id."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PACKAGES = {
    "fault-localisation": ("fault_localisation", "FaultLocalisationTaskset"),
    "schema-migration": ("schema_migration", "SchemaMigrationTaskset"),
}


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.splitlines()[-1]


@pytest.mark.parametrize("package", sorted(p for p, _ in PACKAGES.values()))
def test_the_package_lists_lean_env_yet_imports_no_verifiers(package: str) -> None:
    found = json.loads(
        _run(f"import json, sys, {package} as p\nprint(json.dumps([p.__all__, 'verifiers' in sys.modules]))")
    )
    assert found == [sorted(found[0]), False] and "LeanEnv" in found[0]


@pytest.mark.parametrize("taskset_id", sorted(PACKAGES))
def test_verifiers_resolves_the_lean_env_by_taskset_id_with_lean_as_the_default_path(taskset_id: str) -> None:
    from verifiers.v1.utils.loaders import env_config_type, environment_class, taskset_class

    from arena_kit.envs.lean import LeanEnv, LeanEnvConfig

    package, taskset = PACKAGES[taskset_id]
    assert environment_class(taskset_id) is LeanEnv
    assert taskset_class(taskset_id).__name__ == taskset
    config_type = env_config_type(taskset_id)
    assert config_type is LeanEnvConfig and config_type.model_fields["docker"].default == "lean"
    stock = config_type.model_validate({"taskset": {"id": taskset_id}, "docker": "stock"})
    assert stock.docker == "stock"
    with pytest.raises(AttributeError, match=f"{package}.*no attribute 'Lean'"):
        getattr(__import__(package), "Lean")
