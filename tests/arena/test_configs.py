"""Every TOML in configs/ is what its one source writes (`arena.eval_configs`), a valid vf-eval config for
an installed environment, safe by default.

Three families, one per environment and harness: `<env>-<harness>.toml` (docker, the embedded model
server), `<env>-<harness>-<provider>.toml` (the same, against a real provider) and
`<env>-<harness>-prime.toml` (the prime runtime). The environments and harnesses are discovered
(`arena.eval_configs.repo_environments`, `config_harnesses`), never listed here.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from arena.eval_configs import CONFIG_DIR, REAL_APIS, check, config_harnesses, eval_configs, expected, repo_environments, write
from arena.errors import UsageError
from arena.images.prime_configs import rewrite_runtime_image
from arena_kit.isolation import ISOLATION

CONFIGS = sorted(CONFIG_DIR.glob("*.toml"))
VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))
DIGEST_REF = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")


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


def test_diff_names_every_changed_key():
    a = {"model": "m", "client": {"base_url": "x", "api_key_var": "K"}, "env": {"t": 1}}
    b = {"model": "n", "client": {"base_url": "y", "api_key_var": "K"}, "env": {"t": 1, "u": 2}}
    assert _diff(a, b) == {"model", "client.base_url", "env.u"}
    assert _diff(a, a) == set()


def test_every_environment_in_the_checkout_has_a_docker_a_real_model_and_a_prime_config_per_harness():
    environments, harnesses = repo_environments(), config_harnesses()
    assert environments and harnesses
    names = {path.stem for path in CONFIGS}
    for env in environments:
        for harness in harnesses:
            expected_names = {f"{env}-{harness}", f"{env}-{harness}-{REAL_APIS[harness].provider}", f"{env}-{harness}-prime"}
            assert expected_names <= names, sorted(expected_names - names)


def test_the_checked_in_configs_are_what_their_source_writes():
    assert check() == [], "configs/ is generated: run `python -m arena.eval_configs` (edit arena/eval_configs.py or arena/retries.py, not the TOMLs)"


def _sources() -> tuple[list[str], list[str], dict[str, list[str]]]:
    environments = repo_environments()
    return environments, config_harnesses(), {env: ["oracle"] for env in environments}


def test_check_names_a_hand_edited_a_missing_and_a_stray_config(tmp_path):
    environments, harnesses, policies = _sources()
    configs = eval_configs(environments, harnesses, policies, {})
    for config in configs:
        (tmp_path / config.name).write_text(config.text)
    assert check(tmp_path, configs) == []
    edited, removed = tmp_path / configs[0].name, tmp_path / configs[1].name
    edited.write_text(edited.read_text().replace("max_retries = 7", "max_retries = 9", 1))
    removed.unlink()
    (tmp_path / "by-hand.toml").write_text('model = "x"\n')
    assert set(check(tmp_path, configs)) == {
        f"{configs[0].name}: differs from its source", f"{configs[1].name}: missing", "by-hand.toml: no environment and harness make it"}


def test_an_environment_or_a_harness_added_without_its_configs_is_caught():
    environments, harnesses, policies = _sources()
    grown = eval_configs([*environments, "demo-env"], harnesses, {**policies, "demo-env": ["oracle", "staller"]}, {})
    problems = check(CONFIG_DIR, grown)
    assert {f"demo-env-{harness}{suffix}.toml: missing" for harness in harnesses
            for suffix in ("", f"-{REAL_APIS[harness].provider}", "-prime")} == set(problems)
    with pytest.raises(UsageError, match="REAL_APIS"):  # a harness must say which real API it speaks
        eval_configs(environments, [*harnesses, "opencode"], policies, {})


def test_an_environment_without_an_oracle_gets_no_config_that_names_one():
    with pytest.raises(UsageError, match="publishes no 'oracle' policy"):
        eval_configs(["demo-env"], ["bash"], {"demo-env": ["staller"]}, {})


def test_no_installed_environment_writes_nothing_rather_than_deleting_every_config(tmp_path, monkeypatch):
    import arena.eval_configs

    (tmp_path / "kept.toml").write_text('model = "x"\n')
    monkeypatch.setattr(arena.eval_configs, "repo_environments", lambda: [])
    with pytest.raises(UsageError, match="make install"):
        write(tmp_path)
    assert (tmp_path / "kept.toml").exists()


def test_regenerating_keeps_the_image_a_publish_wrote_into_a_prime_config(tmp_path):
    write(tmp_path)
    [config] = [c for c in expected(tmp_path) if c.kind == "prime"][:1]
    path = tmp_path / config.name
    published = f"registry.example/arena/{config.env}@sha256:{'a' * 64}"
    path.write_text(rewrite_runtime_image(path.read_text(), published, str(path)))
    assert write(tmp_path) == []
    assert tomllib.loads(path.read_text())["env"]["agent"]["runtime"]["image"] == published
    assert check(tmp_path) == []


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_eval_configs_default_to_the_held_out_test_split(path):
    assert _load(path)["env"]["taskset"]["split"] == "test", "dev is for development; eval configs score on test"


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
@pytest.mark.slow
def test_config_resolves_with_vf_eval_dry_run(path, tmp_path):
    raw = _load(path)
    assert raw["push"] is False, "configs must not upload traces (held-out answers included)"
    # No provider or Prime key is set: a dry run must resolve without any credential.
    proc = subprocess.run(
        [VF_EVAL, "@", str(path), "--dry-run", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env={"ARENA_MODEL_KEY": "x", "PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [resolved] = list(tmp_path.rglob("configs/resolved/eval.json"))
    config = json.loads(resolved.read_text())
    runtime = config["env"]["agent"]["runtime"]
    if _kind(path) == "prime":
        assert runtime["type"] == "prime"
        assert DIGEST_REF.match(runtime["image"]), f"prime images go by digest: {runtime['image']!r}"
        assert (runtime["cpu"], runtime["memory"]) == (ISOLATION.cpu, ISOLATION.memory)
        interception = config["env"]["interception"]
        assert interception["type"] == "server" and interception["tunnel"]["type"] == "custom"
    else:
        assert runtime["type"] == "docker" and runtime["image"].startswith("arena/")


@pytest.mark.parametrize("path", [p for p in CONFIGS if _kind(p) == "real-model"], ids=lambda p: p.stem)
def test_real_model_config_differs_from_its_docker_config_only_in_the_client_and_model(path):
    env_harness, _, provider = path.stem.rpartition("-")
    raw, docker = _load(path), _load(CONFIG_DIR / f"{env_harness}.toml")
    assert _diff(raw, docker) <= {"model", "client.base_url", "client.api_key_var"}, _diff(raw, docker)
    api = REAL_APIS[raw["env"]["agent"]["harness"]["id"]]
    assert provider == api.provider
    assert raw["client"] == {"base_url": api.base_url, "api_key_var": api.api_key_var}
    assert not raw["model"].startswith("arena/"), "a real-model config names a real model"


@pytest.mark.parametrize("path", [p for p in CONFIGS if _kind(p) == "prime"], ids=lambda p: p.stem)
def test_prime_config_differs_from_its_docker_config_only_in_runtime_and_interception(path):
    raw, docker = _load(path), _load(CONFIG_DIR / f"{path.stem.removesuffix('-prime')}.toml")
    changed = _diff(raw, docker)
    assert all(key.startswith(("env.agent.runtime.", "env.interception")) for key in changed), changed
    assert raw["env"]["agent"]["runtime"]["type"] == "prime"
    # `arena images publish` rewrites this one line to the pushed digest.
    assert len(re.findall(r"(?m)^image = ", path.read_text())) == 1


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_runs_its_tasks_isolated_by_default(path):
    """The config's tasks carry Arena's isolation (memory, CPU, PIDs, no egress, stage limits), and
    the runtime verifiers resolves for them is limited and network-restricted."""
    import verifiers.v1 as vf
    from verifiers.v1.utils.compile import resolve_runtime_config

    raw = _load(path)
    taskset_table = raw["env"]["taskset"]
    taskset = vf.load_taskset(vf.taskset_config_type(taskset_table["id"]).model_validate(taskset_table))
    task = next(iter(taskset.take(1)))
    declared = ISOLATION.task_fields()
    assert (task.data.resources, task.data.timeout, task.data.network_allow) == (
        declared["resources"], declared["timeout"], declared["network_allow"])
    assert task.config.pids_limit == ISOLATION.pids
    runtime = resolve_runtime_config(vf.AgentConfig.model_validate({"runtime": raw["env"]["agent"]["runtime"]}).runtime, task)
    assert (runtime.memory, runtime.cpu) == (ISOLATION.memory, ISOLATION.cpu)
    assert runtime.network_restricted and runtime.allow == []


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_retries_the_infrastructure_faults_arena_retries(path):
    """A config run with vf-eval directly reruns the same faults Arena's own commands do, no more."""
    from arena.retries import retries_table

    env = _load(path)["env"]
    assert env["retries"] == retries_table()
    assert "retries" not in env["agent"], "a per-agent table is never applied to a box the env lends (a lean box)"
