"""Every TOML in configs/ is what its one source writes (`arena.eval_configs`), names no environment, and is a valid
vf-eval config for every environment, safe by default.

Three per harness: `<harness>.toml` (docker, the embedded model server), `<harness>-<provider>.toml` (the same,
against a real provider) and `<harness>-prime.toml` (the prime runtime, each environment's published digest).
The environment is the leading id on the command line (`vf-eval <env-id> @ configs/bash.toml`) and its box image
comes from the environment (`arena_kit.box.image`), so an environment added, a scaffold included, needs no config:
the checks below run every config against both shipped environments and one `arena new-env` wrote.
"""

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from arena_testkit.scaffolded import scaffolded

from arena.eval_configs import (
    CONFIG_DIR,
    DEFAULT_MODEL,
    REAL_APIS,
    check,
    config_harnesses,
    eval_configs,
    expected,
    write,
)
from arena.errors import UsageError
from arena.images.lock import DEFAULT_LOCK, ImageLock, PublishedImage, write_lock
from arena.new_env import new_environment
from arena_kit.box.isolation import ISOLATION

CONFIGS = sorted(CONFIG_DIR.glob("*.toml"))
SHIPPED = ("fault-localisation", "schema-migration")
SCAFFOLD = "cfg-scaffold"
"""An environment `arena new-env` writes for these tests, installed nowhere: it has no config of its own."""
VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))
REGISTRY = "registry.example/arena"


def _load(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def _kind(path: Path) -> str:
    if path.stem.endswith("-prime"):
        return "prime"
    if path.stem.endswith(tuple(f"-{api.provider}" for api in REAL_APIS.values())):
        return "real-model"
    return "docker"


def _diff(a: Any, b: Any, prefix: str = "") -> set[str]:
    """The dotted keys at which two parsed TOML documents differ (a whole table when only one side has it)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys: set[str] = set()
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                keys.add(prefix + key)
            else:
                keys |= _diff(a[key], b[key], f"{prefix}{key}.")
        return keys
    return set() if a == b else {prefix.rstrip(".")}


def _published(env: str) -> PublishedImage:
    digest = hashlib.sha256(env.encode()).hexdigest()
    return PublishedImage(
        env=env,
        local_tag=f"arena/{env}:0123456789abcdef",
        content_hash="0123456789abcdef",
        registry=REGISTRY,
        ref=f"{REGISTRY}/{env}@sha256:{digest}",
        pushed_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def _lock_in(cwd: Path, *envs: str) -> ImageLock:
    """`arena images publish`'s lock for `envs`, where a prime config run from `cwd` reads it."""
    lock = ImageLock().merged([_published(env) for env in envs])
    write_lock(cwd / DEFAULT_LOCK, lock)
    return lock


def test_diff_names_every_changed_key():
    a = {"model": "m", "client": {"base_url": "x", "api_key_var": "K"}, "env": {"t": 1}}
    b = {"model": "n", "client": {"base_url": "y", "api_key_var": "K"}, "env": {"t": 1, "u": 2}}
    assert _diff(a, b) == {"model", "client.base_url", "env.u"}
    assert _diff(a, a) == set()


def test_every_harness_has_a_docker_a_real_model_and_a_prime_config_and_nothing_else_is_there():
    harnesses = config_harnesses()
    assert harnesses
    wanted = {f"{h}{suffix}" for h in harnesses for suffix in ("", f"-{REAL_APIS[h].provider}", "-prime")}
    assert {path.stem for path in CONFIGS} == wanted


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_no_config_names_an_environment_or_an_image(path):
    from arena.installed import entry_points

    raw = _load(path)
    assert "id" not in raw["env"]["taskset"], "the taskset is the leading id of the command line"
    assert "image" not in raw["env"]["agent"]["runtime"], "the image is the environment's (arena_kit.box.image)"
    assert "image" not in raw["env"]["taskset"].get("task", {})
    text = path.read_text()
    assert not [point.name for point in entry_points() if point.name in text]


def test_the_checked_in_configs_are_what_their_source_writes():
    assert check() == [], (
        "configs/ is generated: run `python -m arena.eval_configs` (edit arena/eval_configs.py or arena/retries.py, not the TOMLs)"
    )


def test_check_names_a_hand_edited_a_missing_and_a_stray_config(tmp_path):
    configs = eval_configs(config_harnesses())
    for config in configs:
        (tmp_path / config.name).write_text(config.text)
    assert check(tmp_path, configs) == []
    edited, removed = tmp_path / configs[0].name, tmp_path / configs[1].name
    edited.write_text(edited.read_text().replace("max_retries = 7", "max_retries = 9", 1))
    removed.unlink()
    (tmp_path / "fault-localisation-bash.toml").write_text('model = "x"\n')
    assert set(check(tmp_path, configs)) == {
        f"{configs[0].name}: differs from its source",
        f"{configs[1].name}: missing",
        "fault-localisation-bash.toml: no harness and kind make it",
    }


def test_writing_replaces_the_per_environment_configs_and_keeps_the_image_lock(tmp_path):
    (tmp_path / "schema-migration-bash-prime.toml").write_text('model = "x"\n')
    write_lock(tmp_path / "images.lock.json", ImageLock())
    written = write(tmp_path)
    assert sorted(p.name for p in written) == sorted(c.name for c in expected())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*(c.name for c in expected()), "images.lock.json"])
    assert write(tmp_path) == [] and check(tmp_path) == []


def test_a_harness_without_a_real_api_is_refused():
    with pytest.raises(UsageError, match="REAL_APIS"):  # a harness must say which real API it speaks
        eval_configs([*config_harnesses(), "opencode"])


def test_a_new_environment_needs_no_config(tmp_path):
    """What the generator writes depends on no environment: one more installed (a scaffold, its entry point
    visible) leaves configs/ whole and in step."""
    from arena.installed import entry_points

    before = expected()
    with scaffolded("cfg-installed", tmp_path):
        assert "cfg-installed" in {point.name for point in entry_points()}
        assert expected() == before and check() == []


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_eval_configs_default_to_the_held_out_test_split_and_the_do_nothing_model(path):
    raw = _load(path)
    assert raw["env"]["taskset"]["split"] == "test", "dev is for development; eval configs score on test"
    assert raw["model"] == (
        DEFAULT_MODEL if _kind(path) != "real-model" else REAL_APIS[raw["env"]["agent"]["harness"]["id"]].model
    )


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder of an `arena new-env` package (PYTHONPATH for a vf-eval that resolves it)."""
    _names, folder, _written = new_environment(
        SCAFFOLD, tmp_path_factory.mktemp("scaffold") / SCAFFOLD.replace("-", "_")
    )
    yield folder


RESOLVE = """
import json, sys
import verifiers.v1 as vf
from verifiers.v1.utils.compile import resolve_runtime_config
config = json.load(open(sys.argv[1]))
taskset = config["env"]["taskset"]
try:
    task = next(iter(vf.load_taskset(vf.taskset_config_type(taskset["id"]).model_validate(taskset)).take(1)))
except ValueError as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(0)
runtime = resolve_runtime_config(vf.AgentConfig.model_validate({"runtime": config["env"]["agent"]["runtime"]}).runtime, task)
print(json.dumps({"taskset": taskset["id"], "split": taskset["split"], "type": runtime.type, "image": runtime.image,
                  "cpu": runtime.cpu, "memory": runtime.memory}))
"""


def _run(argv: list[str], cwd: Path, scaffold: Path) -> subprocess.CompletedProcess[str]:
    # No provider or Prime key is set: a dry run must resolve without any credential.
    env = {
        "ARENA_MODEL_KEY": "x",
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(cwd),
        "PYTHONPATH": str(scaffold),
        "ARENA_TASK_SECRET": os.environ["ARENA_TASK_SECRET"],
    }
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=cwd, env=env)


@pytest.mark.parametrize("env", [*SHIPPED, SCAFFOLD])
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
@pytest.mark.slow
def test_vf_eval_dry_run_of_a_config_resolves_the_environment_s_taskset_and_image(path, env, scaffold, tmp_path):
    """`vf-eval <env> @ configs/<config> --dry-run` (no runtime started), then the resolved config's first task
    under verifiers' own runtime resolution: the environment's taskset and its own image on docker, the digest
    the lock pins on prime (a prime run of an environment the lock does not name is refused)."""
    raw = _load(path)
    assert raw["push"] is False, "configs must not upload traces (held-out answers included)"
    proc = _run([VF_EVAL, env, "@", str(path), "--dry-run", "-o", str(tmp_path / "out")], tmp_path, scaffold)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [resolved] = list(tmp_path.rglob("configs/resolved/eval.json"))
    lock = _lock_in(tmp_path, *SHIPPED)
    proc = _run([sys.executable, "-c", RESOLVE, str(resolved)], tmp_path, scaffold)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    if _kind(path) == "prime" and env not in lock.images:
        assert "pins no image of 'cfg-scaffold'" in got["refused"] and "arena images publish" in got["refused"]
        return
    assert (got["taskset"], got["split"]) == (env, "test")
    if _kind(path) == "prime":
        assert (got["type"], got["image"]) == ("prime", lock.images[env].ref)
        assert (got["cpu"], got["memory"]) == (ISOLATION.cpu, ISOLATION.memory)
        interception = json.loads(resolved.read_text())["env"]["interception"]
        assert interception["type"] == "server" and interception["tunnel"]["type"] == "custom"
    else:
        assert (got["type"], got["image"]) == ("docker", f"arena/{env}:latest")


@pytest.mark.parametrize("path", [p for p in CONFIGS if _kind(p) == "real-model"], ids=lambda p: p.stem)
def test_real_model_config_differs_from_its_docker_config_only_in_the_client_and_model(path):
    harness, _, provider = path.stem.rpartition("-")
    raw, docker = _load(path), _load(CONFIG_DIR / f"{harness}.toml")
    assert _diff(raw, docker) <= {"model", "client.base_url", "client.api_key_var"}, _diff(raw, docker)
    api = REAL_APIS[raw["env"]["agent"]["harness"]["id"]]
    assert provider == api.provider
    assert raw["client"] == {"base_url": api.base_url, "api_key_var": api.api_key_var}
    assert not raw["model"].startswith("arena/"), "a real-model config names a real model"


@pytest.mark.parametrize("path", [p for p in CONFIGS if _kind(p) == "prime"], ids=lambda p: p.stem)
def test_prime_config_differs_from_its_docker_config_only_in_runtime_interception_and_image_lock(path):
    raw, docker = _load(path), _load(CONFIG_DIR / f"{path.stem.removesuffix('-prime')}.toml")
    changed = _diff(raw, docker)
    assert all(key.startswith(("env.agent.runtime.", "env.interception")) for key in changed - {"env.taskset.task"}), (
        changed
    )
    assert raw["env"]["agent"]["runtime"]["type"] == "prime"
    assert raw["env"]["taskset"]["task"] == {"image_lock": str(DEFAULT_LOCK)}


@pytest.mark.parametrize("env", SHIPPED)
@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_runs_its_tasks_isolated_by_default_in_their_environment_s_image(path, env, tmp_path, monkeypatch):
    """The config's tasks carry Arena's isolation (memory, CPU, PIDs, no egress, stage limits), and
    the runtime verifiers resolves for them is limited, network-restricted and the environment's image."""
    import verifiers.v1 as vf
    from verifiers.v1.utils.compile import resolve_runtime_config

    raw = _load(path)
    monkeypatch.chdir(tmp_path)
    lock = _lock_in(tmp_path, env)  # a prime config's image_lock, relative to the working directory
    taskset_table = {**raw["env"]["taskset"], "id": env}
    taskset = vf.load_taskset(vf.taskset_config_type(env).model_validate(taskset_table))
    task = next(iter(taskset.take(1)))
    declared = ISOLATION.task_fields()
    assert (task.data.resources, task.data.timeout, task.data.network_allow) == (
        declared["resources"],
        declared["timeout"],
        declared["network_allow"],
    )
    assert task.config.pids_limit == ISOLATION.pids
    runtime = resolve_runtime_config(
        vf.AgentConfig.model_validate({"runtime": raw["env"]["agent"]["runtime"]}).runtime, task
    )
    assert (runtime.memory, runtime.cpu) == (ISOLATION.memory, ISOLATION.cpu)
    assert runtime.network_restricted and runtime.allow == []
    assert runtime.image == (lock.images[env].ref if _kind(path) == "prime" else f"arena/{env}:latest")


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_retries_the_infrastructure_faults_arena_retries(path):
    """A config run with vf-eval directly reruns the same faults Arena's own commands do, no more."""
    from arena.retries import retries_table

    env = _load(path)["env"]
    assert env["retries"] == retries_table()
    assert "retries" not in env["agent"], "a per-agent table is never applied to a box the env lends (a lean box)"
