"""`ArenaTask`: hardened by default, confined before the environment's own set-up, opting out only out loud, rules wired."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
import verifiers.v1 as vf

from arena_kit.box import isolation
from arena_kit.contract import Environment, OptOut
from arena_kit.contract.task import OPT_OUT_KEY, ArenaData, ArenaTask, ArenaTaskConfig, departures
from arena_kit.box.isolation import ISOLATION
from arena_kit.records import RUN_DIR_ENV

SPEC = Environment(id="contract-unit", taskset="contract_unit.taskset:T", policies="contract_unit.policies:P")
OPEN = Environment(
    id="contract-unit",
    taskset="contract_unit.taskset:T",
    policies="contract_unit.policies:P",
    opt_out=OptOut(reason="a host-only baseline", confine=False, loosen=("network_allow", "agent_user")),
)
SECRET = "the-answer-key-1234"


class Data(ArenaData):
    seed: int = 0


class Task(ArenaTask[Data, vf.State, ArenaTaskConfig]):
    ENVIRONMENT = SPEC
    events: list[str]

    async def prepare(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        self.events = [*getattr(self, "events", []), "prepare"]

    async def held_out(self, trace: vf.Trace) -> Sequence[str]:
        self.events = [*getattr(self, "events", []), "held_out"]
        return [SECRET]


class OpenTask(Task):
    ENVIRONMENT = OPEN


def _runtime() -> Any:
    # A lean-like docker box: uid and workdir owner set at create time, so only the PIDs limit is applied here.
    return SimpleNamespace(
        info=SimpleNamespace(type="docker", id="c1", workdir="/app"), own_uid=True, created_workdir_owner="agent"
    )


def _trace(task: Task) -> Any:
    return SimpleNamespace(info={}, id="t1", agent=None, task=SimpleNamespace(data=task.data), state=vf.State())


@pytest.fixture
def pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    limited: list[int] = []

    async def record(runtime: object, limit: int) -> None:
        limited.append(limit)

    monkeypatch.setattr(isolation, "_limit_pids", record)
    return limited


def test_the_data_defaults_are_the_hardened_box() -> None:
    data = Data(prompt="p")
    assert {name: getattr(data, name) for name in ISOLATION.task_fields()} == {
        name: list(value) if isinstance(value, list) else value for name, value in ISOLATION.task_fields().items()
    }
    assert departures(data) == {}


def test_a_tighter_box_is_no_departure_and_a_looser_one_is() -> None:
    tight = Data(
        prompt="p",
        resources=vf.TaskResources(cpu=0.5, memory=1.0),
        timeout=vf.TaskTimeout(setup=10, agent=10, finalize=10, scoring=10),
    )
    assert departures(tight) == {}
    loose = Data(prompt="p", resources=vf.TaskResources(cpu=None, memory=1.0), network_allow=["*"], agent_user=None)
    assert set(departures(loose)) == {"resources", "network_allow", "agent_user"}


def test_setup_confines_the_box_before_the_environment_s_own_set_up(pids: list[int]) -> None:
    task = Task(Data(prompt="p"))
    trace = _trace(task)
    asyncio.run(task.setup(trace, _runtime()))
    assert len(pids) == 1 and task.events == ["prepare"]
    assert OPT_OUT_KEY not in trace.info


def test_a_failed_confinement_fails_setup_before_the_environment_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(runtime: object, limit: int) -> None:
        raise vf.SandboxError("the engine refused")

    monkeypatch.setattr(isolation, "_limit_pids", refuse)
    task = Task(Data(prompt="p"))
    with pytest.raises(vf.SandboxError, match="refused"):
        asyncio.run(task.setup(_trace(task), _runtime()))
    assert not hasattr(task, "events")


def test_a_declared_opt_out_skips_confinement_and_says_so_in_the_trace(pids: list[int]) -> None:
    task = OpenTask(Data(prompt="p", network_allow=["*"], agent_user=None))
    trace = _trace(task)
    asyncio.run(task.setup(trace, _runtime()))
    assert pids == [] and task.events == ["prepare"]
    assert trace.info[OPT_OUT_KEY] == {
        "reason": "a host-only baseline",
        "confined": False,
        "loosened": {"network_allow": ["*"], "agent_user": None},
    }


def test_an_undeclared_departure_is_refused_when_the_task_is_built() -> None:
    with pytest.raises(ValueError, match="loosens the hardened box .*network_allow"):
        Task(Data(prompt="p", network_allow=["*"]))
    with pytest.raises(ValueError, match="timeout"):
        OpenTask(Data(prompt="p", timeout=vf.TaskTimeout(agent=None)))


@pytest.mark.parametrize("method", ["setup", "arena_rules"])
def test_a_task_cannot_replace_what_the_contract_owns(method: str) -> None:
    async def replaced(self: object, *args: object) -> None:
        return None

    with pytest.raises(TypeError, match=f"overrides {method}, which the contract owns"):
        type("Sneaky", (Task,), {method: replaced})


def test_a_task_must_say_what_it_holds_out_and_which_environment_it_is() -> None:
    class Silent(ArenaTask[Data, vf.State, ArenaTaskConfig]):
        ENVIRONMENT = SPEC

    with pytest.raises(TypeError, match="abstract"):
        Silent(Data(prompt="p"))  # type: ignore[abstract]

    class Nameless(ArenaTask[Data, vf.State, ArenaTaskConfig]):
        async def held_out(self, trace: vf.Trace) -> Sequence[str]:
            return ()

    with pytest.raises(TypeError, match="declares no ENVIRONMENT"):
        Nameless(Data(prompt="p"))


def _request(command: str, result: str) -> vf.Request:
    call = vf.ToolCall(id="c1", name="bash", arguments=json.dumps({"command": command}))
    return vf.Request(
        messages=[
            vf.UserMessage(content="go"),
            vf.AssistantMessage(tool_calls=[call]),
            vf.ToolMessage(tool_call_id="c1", content=result, name="bash"),
        ]
    )


def test_the_rewrite_rules_deny_a_hack_withhold_a_leak_and_leave_honest_work_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)
    task = Task(Data(prompt="p"))
    trace = _trace(task)
    denied = asyncio.run(task.arena_rules(_request("curl https://example.com", ""), trace))
    assert denied is not None and denied.messages[-1].content != ""
    leaked = asyncio.run(task.arena_rules(_request("cat notes.txt", f"notes: {SECRET}"), trace))
    assert leaked is not None and SECRET not in str(leaked.messages[-1].content)
    assert asyncio.run(task.arena_rules(_request("ls -la", "a.txt b.txt"), trace)) is None
    assert [r["rule"] for r in trace.info["arena_rewrites"]] == ["net-egress", "held-out-leak"]
    assert all(r["environment"] == "contract-unit" for r in trace.info["arena_rewrites"])


def test_held_out_is_not_computed_for_a_request_with_no_tool_message() -> None:
    task = Task(Data(prompt="p"))
    request = vf.Request(messages=[vf.UserMessage(content="go")])
    assert asyncio.run(task.arena_rules(request, _trace(task))) is None
    assert not hasattr(task, "events")


def test_a_task_runs_its_environment_s_image_unless_its_data_or_its_config_names_another(tmp_path: Any) -> None:
    assert Task(Data(prompt="p")).data.image == "arena/contract-unit:latest"
    assert Task(Data(prompt="p", image="own/image:1")).data.image == "own/image:1"
    assert (
        Task(Data(prompt="p", image="own/image:1"), ArenaTaskConfig(image="config/image:2")).data.image
        == "config/image:2"
    )
    ref = "registry.example/arena/contract-unit@sha256:" + "c" * 64
    lock = tmp_path / "images.lock.json"
    lock.write_text(json.dumps({"images": {"contract-unit": {"ref": ref}}}))
    assert Task(Data(prompt="p"), ArenaTaskConfig(image_lock=lock)).data.image == ref
