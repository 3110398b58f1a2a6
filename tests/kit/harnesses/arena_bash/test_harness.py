"""The `arena-bash` host side: resolved by id like any verifiers harness, configured with `bash`'s
knobs, and launching its program with exactly the argv and env verifiers' `bash` harness uses."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
import verifiers.v1 as vf
from verifiers.v1.clients import ModelContext
from verifiers.v1.harnesses.bash.harness import BashHarness, BashHarnessConfig
from verifiers.v1.runtimes import ProgramResult
from verifiers.v1.utils.loaders import harness_class, harness_config_type

from arena_kit.harnesses.arena_bash.harness import LeanBashHarness
from arena_kit.harnesses.arena_bash.harness import INTERPRETER, RUNNER_SOURCE, runner_path
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

TASK = vf.TaskData(prompt="Find the fault.", system_prompt="Task system prompt.")


@dataclass
class RecordingRuntime:
    """The part of a verifiers Runtime a chat harness touches, recording what it is asked to do."""

    user: str | None = None
    scripts_dir: str = "/tmp/vf-scripts"
    writes: dict[str, bytes] = field(default_factory=dict)
    runs: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)

    async def write(self, path: str, data: bytes) -> None:
        self.writes[path] = data

    async def prepare_uv_script(self, source: str, env: Any = None, *, activate: bool = True) -> list[str]:
        return ["<uv-program>"]

    async def run_program(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        self.runs.append((argv, env))
        return ProgramResult(exit_code=0, stdout="", stderr="")


@dataclass
class FakeTrace:
    id: str = "trace-1"


def _launch(
    harness: BashHarness, data: vf.TaskData, gate: str | None
) -> tuple[list[str], dict[str, str], RecordingRuntime]:
    runtime = RecordingRuntime()
    ctx = ModelContext(model="arena/m", client=vf.EvalClientConfig(base_url="http://x/v1"))
    mcp = {"log_search": "http://127.0.0.1:9/mcp?route=r"}
    asyncio.run(
        harness.launch(ctx, FakeTrace(), runtime, "http://host/v1", "secret", mcp, data, tool_interception_url=gate)
    )
    [(argv, env)] = runtime.runs
    return argv, env, runtime


CONFIGS = [
    {},
    {"edit": False, "compaction": None},
    {"compaction": {"summarize_at_tokens": 5000}, "env": {"A": "1"}, "tool_timeout": 30.0},
    {"search": True, "env": {"SERPER_API_KEY": "serper-secret", "B": "2"}},
]


@pytest.mark.parametrize("knobs", CONFIGS, ids=["defaults", "no-edit-no-compaction", "threshold-env-timeout", "search"])
@pytest.mark.parametrize("gate", [None, "http://host/tool"], ids=["no-gate", "gate"])
def test_lean_harness_passes_the_bash_harness_argv_and_env(knobs: dict[str, Any], gate: str | None) -> None:
    config = BashHarnessConfig.model_validate({"id": "arena-bash", **knobs})
    ref_argv, ref_env, _ = _launch(BashHarness(config), TASK, gate)
    argv, env, runtime = _launch(LeanBashHarness(config), TASK, gate)
    path = runner_path(runtime)  # type: ignore[arg-type]
    assert argv[: len(INTERPRETER) + 1] == [*INTERPRETER, path]
    assert argv[len(INTERPRETER) + 1 :] == ref_argv[1:]
    assert env == ref_env
    assert runtime.writes == {path: RUNNER_SOURCE}


def test_a_messages_prompt_goes_through_the_same_file_as_the_bash_harness() -> None:
    data = vf.TaskData(prompt=[vf.UserMessage(content="hi"), vf.AssistantMessage(content="yo")], system_prompt=None)
    config = BashHarnessConfig.model_validate({"id": "arena-bash"})
    ref_argv, _, ref_runtime = _launch(BashHarness(config), data, None)
    argv, _, runtime = _launch(LeanBashHarness(config), data, None)
    assert argv[len(INTERPRETER) + 1 :] == ref_argv[1:]
    assert {k: v for k, v in runtime.writes.items() if k.startswith(".vf-")} == ref_runtime.writes


def test_search_without_a_key_is_refused_with_a_worded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    harness = LeanBashHarness(BashHarnessConfig.model_validate({"id": "arena-bash", "search": True}))
    with pytest.raises(ValueError, match="SERPER_API_KEY"):
        _launch(harness, TASK, None)


def test_the_runner_sits_where_its_writer_owns_the_directory() -> None:
    """In a lean box root writes the runner (making its directory): in the agent's `/tmp/vf-scripts-agent`
    that directory would be root's, and closed to the agent's own harness files. On the stock path the
    agent writes it into its own directory, as verifiers writes its runner."""
    lean = LeanDockerRuntime(vf.DockerConfig(image="arena/harness:latest"))
    assert runner_path(lean).startswith("/tmp/vf-scripts/arena-lean-")
    assert runner_path(lean.with_user("agent", home="/home/agent")).startswith("/tmp/vf-scripts-arena/arena-lean-")
    assert runner_path(RecordingRuntime()).startswith("/tmp/vf-scripts/arena-lean-")  # type: ignore[arg-type]
    assert runner_path(RecordingRuntime(user="agent")).startswith("/tmp/vf-scripts-agent/arena-lean-")  # type: ignore[arg-type]


def test_setup_installs_nothing() -> None:
    runtime = RecordingRuntime()
    asyncio.run(LeanBashHarness(BashHarnessConfig()).setup(runtime))
    assert runtime.writes == {} and runtime.runs == []


def test_the_id_arena_bash_resolves_to_the_lean_harness_with_bash_knobs() -> None:
    assert harness_class("arena-bash") is LeanBashHarness
    assert harness_config_type("arena-bash") is BashHarnessConfig
    agent = vf.AgentConfig.model_validate({"harness": {"id": "arena-bash", "edit": False, "tool_timeout": 30}})
    assert isinstance(agent.harness, BashHarnessConfig) and agent.harness.edit is False
    assert (
        LeanBashHarness.SUPPORTS_TOOL_INTERCEPTION and LeanBashHarness.SUPPORTS_MCP and LeanBashHarness.SUPPORTS_RESUME
    )
