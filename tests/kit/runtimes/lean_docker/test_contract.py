"""The verifiers seams the lean path stands on, pinned so a verifiers upgrade fails here, loudly, first."""

import asyncio
import importlib.metadata
import inspect
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf
from verifiers.v1.agent import Agent, _check_borrowed_placement
from verifiers.v1.runtimes import make_runtime
from verifiers.v1.runtimes.docker import DockerRuntime
from verifiers.v1.configs.runtime import NetworkPolicyConfig
from verifiers.v1.runtimes.docker.egress import EgressProxy, NetworkPolicy
from verifiers.v1.utils.loaders import env_config_type, environment_class

import arena_kit.box.isolation as isolation
from arena_kit.verifiers_seam import VERIFIERS_VERSION
from arena_kit.envs.lean import LeanEnv, LeanEnvConfig
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime


def test_the_installed_verifiers_is_the_release_the_lean_path_was_written_against():
    assert importlib.metadata.version("verifiers") == VERIFIERS_VERSION, (
        "verifiers changed: re-check Agent.run(runtime=), _check_borrowed_placement, DockerRuntime._exec and "
        "the egress proxy against arena_kit/lean before moving VERIFIERS_VERSION"
    )


def test_an_agent_run_still_borrows_a_live_box():
    assert "runtime" in inspect.signature(Agent.run).parameters
    assert "runtime" in inspect.signature(_check_borrowed_placement).parameters


def test_verifiers_runtime_types_are_still_a_closed_list_without_ours():
    with pytest.raises(KeyError):
        make_runtime(SimpleNamespace(type="lean"))  # type: ignore[arg-type]


def test_the_smoke_taskset_opts_in_and_its_config_selects_the_path():
    assert environment_class("arena-smoke") is LeanEnv
    config_type = env_config_type("arena-smoke")
    assert config_type is LeanEnvConfig
    assert config_type.model_fields["docker"].default == "lean"


def test_the_path_flag_takes_lean_or_stock_and_names_the_choices_otherwise():
    base = {"taskset": {"id": "arena-smoke"}}
    assert LeanEnvConfig.model_validate({**base, "docker": "stock"}).docker == "stock"
    with pytest.raises(ValueError, match="'lean' or 'stock'"):
        LeanEnvConfig.model_validate({**base, "docker": "fast"})


def _box(restricted: bool) -> LeanDockerRuntime:
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/harness", allow=[] if restricted else ["*"]))
    box.container = "vf-test"
    box.image_env = {"NO_PROXY": "internal.example"}
    box.proxy = EgressProxy(NetworkPolicy(NetworkPolicyConfig(), []))
    box.proxy.port = 4242
    box.cut = restricted
    return box


def test_a_restricted_box_sends_every_exec_through_the_proxy_as_verifiers_does_after_its_cut():
    env = _box(restricted=True)._exec_env({"A": "1"})
    assert env["A"] == "1"
    assert env["HTTPS_PROXY"].endswith("@127.0.0.1:4242") and env["HTTP_PROXY"] == env["HTTPS_PROXY"]


def test_an_open_box_keeps_the_image_s_proxy_exclusions_as_verifiers_does():
    env = _box(restricted=False)._exec_env({})
    assert "HTTPS_PROXY" not in env
    assert env["NO_PROXY"].split(",")[:2] == ["internal.example", "localhost"]


def test_verifiers_still_builds_its_exec_argv_from_env_flags():
    argv = DockerRuntime._exec(_box(restricted=False), {"K": "V=W"})
    assert argv[:2] == ["docker", "exec"] and argv[-1] == "vf-test"
    assert "K=V=W" in argv and argv[argv.index("K=V=W") - 1] == "--env"


def test_the_lean_runtime_refuses_other_engines():
    with pytest.raises(ValueError, match="docker only"):
        LeanDockerRuntime(vf.PodmanConfig())


def test_confine_trusts_a_limit_set_at_create_and_runs_no_engine_command(monkeypatch):
    async def no_cli(*argv, **kwargs):
        raise AssertionError(f"confine ran {argv}")

    monkeypatch.setattr(isolation.asyncio, "create_subprocess_exec", no_cli)
    box = SimpleNamespace(name="b", created_pids_limit=64, info=SimpleNamespace(type="docker", id="vf-x"))
    asyncio.run(isolation.confine(box, 64, None))  # type: ignore[arg-type]


def test_confine_still_updates_a_stock_box_or_a_lean_box_created_with_another_limit(monkeypatch):
    seen: list[tuple[str, ...]] = []

    class Done:
        returncode = 0

        async def communicate(self):
            return b"", b""

    async def record(*argv, **kwargs):
        seen.append(argv)
        return Done()

    monkeypatch.setattr(isolation.asyncio, "create_subprocess_exec", record)
    monkeypatch.setattr(isolation.shutil, "which", lambda _name: "/usr/bin/docker")
    for box in (
        SimpleNamespace(name="stock", info=SimpleNamespace(type="docker", id="vf-a")),
        SimpleNamespace(name="lean", created_pids_limit=32, info=SimpleNamespace(type="docker", id="vf-b")),
    ):
        asyncio.run(isolation.confine(box, 64, None))  # type: ignore[arg-type]
    assert seen == [
        ("docker", "update", "--pids-limit", "64", "vf-a"),
        ("docker", "update", "--pids-limit", "64", "vf-b"),
    ]


def test_stop_removes_the_box_though_verifiers_marks_the_runtime_stopped_first():
    """verifiers' `Runtime.stop` sets the public `stopped` (teardown has begun) before it runs `cleanup`:
    the lean runtime's "already removed" flag must be another one, or no box is ever removed."""
    removed: list[str] = []
    runtime = LeanDockerRuntime(vf.DockerConfig(image="arena/harness:latest"))
    runtime.container = "vf-test-box"
    runtime._api = SimpleNamespace(remove_container=lambda name, force: removed.append(name))
    asyncio.run(runtime.stop())
    assert removed == ["vf-test-box"] and runtime.removed
    asyncio.run(runtime.stop())  # idempotent: removed once
    assert removed == ["vf-test-box"]


def test_a_borrowed_handle_never_removes_the_box_it_names():
    removed: list[str] = []
    runtime = LeanDockerRuntime(vf.DockerConfig(image="arena/harness:latest"))
    runtime.container, runtime.removed = "vf-test-box", True  # as `LeanDockerRuntime.borrow` marks its handle
    runtime._api = SimpleNamespace(remove_container=lambda name, force: removed.append(name))
    asyncio.run(runtime.stop())
    assert removed == []
