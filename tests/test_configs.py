"""Every TOML in configs/ is a valid vf-eval config for an installed environment, safe by default."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.toml"))
VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_resolves_with_vf_eval_dry_run(path, tmp_path):
    raw = tomllib.loads(path.read_text())
    assert raw["push"] is False, "configs must not upload traces (held-out answers included)"
    proc = subprocess.run(
        [VF_EVAL, "@", str(path), "--dry-run", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=180, env={"ARENA_MODEL_KEY": "x", "PATH": str(Path(sys.executable).parent)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [resolved] = list(tmp_path.rglob("configs/resolved/eval.json"))
    config = json.loads(resolved.read_text())
    runtime = config["env"]["agent"]["runtime"]
    assert runtime["type"] == "docker" and runtime["image"].startswith("arena/")


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_runs_its_tasks_isolated_by_default(path):
    """The config's tasks carry Arena's isolation (memory, CPU, PIDs, no egress, stage limits), and
    the runtime verifiers resolves for them is limited and network-restricted."""
    import verifiers.v1 as vf
    from verifiers.v1.utils.compile import resolve_runtime_config

    from arena_kit.isolation import ISOLATION

    raw = tomllib.loads(path.read_text())
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
