"""Fail closed: an eval whose engine-side liveness hook cannot install on the running verifiers runs
without the retry rules a box could forge, and says so; with the hook in, every rule stays and only
docker/podman boxes are patched (`arena.vf_hooks`, `arena.retries.without_liveness`)."""

import logging
import tomllib

import pytest
from verifiers.v1.harness import HarnessSession
from verifiers.v1.runtimes.apptainer import ApptainerRuntime
from verifiers.v1.runtimes.container import ContainerRuntime
from verifiers.v1.runtimes.docker import DockerRuntime

import arena.vf_hooks as vf_hooks
from arena.evalrun import EvalRequest, eval_config, fail_closed_note, run_eval
from arena.retries import BOX_GONE, ENGINE_GONE, retries_table
from arena_testkit.fake_vf_eval import fake_vf_eval  # noqa: F401 (fixture)

FORGEABLE = {BOX_GONE, ENGINE_GONE}


@pytest.fixture
def restored(monkeypatch):
    """Whatever a test patches on verifiers' classes is put back after it."""
    for cls, names in (
        (ContainerRuntime, ("alive", "_read", "write", "_communicate_host")),
        (DockerRuntime, ("alive", "_read", "write")),
        (HarnessSession, ("turn",)),
    ):
        for name in names:  # an inherited name is recorded as absent from `cls`, so the undo deletes what a test set
            monkeypatch.setattr(cls, name, getattr(cls, name))
    return monkeypatch


def _request(tmp_path) -> EvalRequest:
    return EvalRequest(
        taskset="t",
        harness="bash",
        model="m",
        image="i",
        base_url="http://127.0.0.1:1",
        run_name="r",
        output_dir=tmp_path,
    )


def _rules(config: dict) -> set:
    return {rule.get("message") for rule in config["env"]["retries"]["rules"]}


def test_a_missing_verifiers_name_installs_no_liveness_and_the_eval_drops_its_forgeable_rules(
    restored, tmp_path, caplog
):
    restored.delattr(ContainerRuntime, "_communicate_host")  # verifiers renamed it, say
    before = DockerRuntime.alive
    with caplog.at_level(logging.WARNING, logger="arena.vf_hooks"):
        assert vf_hooks.install_host_liveness() is False
    assert DockerRuntime.alive is before  # nothing half-patched: verifiers' in-box probe is not trusted either
    assert "_communicate_host" in caplog.text

    request = _request(tmp_path)
    path = tmp_path / "r.arena.toml"
    config = eval_config(request)
    assert FORGEABLE <= _rules(config)
    import tomli_w

    path.write_text(tomli_w.dumps(config))
    with caplog.at_level(logging.WARNING, logger="arena.vf_hooks"):
        args = vf_hooks.fail_closed(["@", str(path), "--no-rich"], "liveness not installed")
    closed = tomllib.loads((tmp_path / args[1]).read_text())
    assert not FORGEABLE & _rules(closed)
    assert {rule["type"] for rule in closed["env"]["retries"]["rules"]} >= {
        "BoxLostError",
        "EngineUnreachableError",
        "ProviderError",
    }
    note = fail_closed_note(request).read_text()
    assert "liveness not installed" in note and "sandbox died or lost" in note and "fail closed" in caplog.text


def test_vf_hooks_runs_vf_eval_on_the_closed_config_when_liveness_cannot_install(restored, tmp_path):
    restored.delattr(ContainerRuntime, "_communicate_host")
    path = tmp_path / "r.arena.toml"
    import tomli_w

    path.write_text(tomli_w.dumps(eval_config(_request(tmp_path))))
    seen: list[list[str]] = []
    for name in ("lighten_imports", "fast_server_polls"):
        restored.setattr(vf_hooks, name, lambda: True)
    restored.setattr(vf_hooks, "prewarm", lambda: None)
    restored.setattr(vf_hooks, "hand_over_tool_server", lambda _warm: True)
    restored.setattr("verifiers.v1.cli.eval.main.main", lambda args: seen.append(list(args)))
    restored.setattr("sys.argv", ["x"])
    vf_hooks.main(["0", "@", str(path), "--no-rich", "--clean"])
    [args] = seen
    assert args[1].endswith("r.arena.fail-closed.toml")
    assert not FORGEABLE & _rules(tomllib.loads((tmp_path / args[1]).read_text()))


def test_with_every_name_present_only_docker_and_podman_boxes_get_engine_liveness_and_every_rule_stays(
    restored, tmp_path
):
    apptainer = ApptainerRuntime.alive
    assert vf_hooks.install_host_liveness() is True
    assert DockerRuntime.alive is not ContainerRuntime.alive  # the engine answers for docker and podman
    assert ApptainerRuntime.alive is apptainer  # an Apptainer box has no engine to ask: left as verifiers has it
    assert FORGEABLE <= {rule.get("message") for rule in retries_table()["rules"]}


def test_an_eval_run_without_the_hooks_drops_the_forgeable_rules_and_its_outcome_says_so(fake_vf_eval, tmp_path):
    # the fake vf-eval is a wrapper, not verifiers' console script: Arena cannot hook it
    outcome = run_eval(_request(tmp_path), progress=lambda _line: None)
    assert outcome.fail_closed is not None and "sandbox died or lost" in outcome.fail_closed
    closed = tomllib.loads((tmp_path / "r.arena.fail-closed.toml").read_text())
    assert not FORGEABLE & _rules(closed)
