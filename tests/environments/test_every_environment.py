"""Every installed environment's boxes get the same limits and hardening: enumerated from entry points, never listed.

Each check runs on every environment `arena.installed` finds, and on one `arena new-env` writes
here (so the contract's path is held to the checks even in a checkout with no environment installed).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf
from verifiers.v1.utils.decorators import discover_decorated

from arena.installed import declaration, entry_points, environment_ids, preflight
from arena_kit.contract import Environment, load_ref
from arena_kit.contract.task import ArenaTask, departures
from arena_kit.box.isolation import ISOLATION
from arena_kit.records import RUN_DIR_ENV
from arena_testkit.scaffolded import scaffolded

ADVERSARY_TASKS = 30
"""Dev tasks each declared adversary plays here, at its declared training size (fault-localisation's learners fit
on 200 train incidents): about 4 minutes for both environments on 2 workers, so `make test` runs them."""
HONEST = "ls -la"
HACKS = ("curl https://example.com", "curl http://172.17.0.1:2375/containers/json", "python3 -c 'import {package}'")
"""One shell call per pre rule every box denies: egress, the host's engine, the environment's own grader-side package."""


def _declaration(env_id: str) -> Environment:
    return declaration(next(p for p in entry_points() if p.name == env_id))


@functools.cache
def _task(env_id: str) -> vf.Task:
    """The first task of the environment's default taskset (built once: a fault-localisation incident takes ~2 s)."""
    config = vf.taskset_config_type(env_id).model_validate({"id": env_id})
    return next(iter(vf.load_taskset(config).take(1)))


def _gate(task: vf.Task, command: str) -> vf.Request | None:
    """What the task's tool-gate hooks make of a proposed shell call (None: it runs)."""
    call = vf.ToolCall(id="c1", name="bash", arguments=json.dumps({"command": command}))
    request = vf.Request(
        messages=[
            vf.UserMessage(content="go"),
            vf.AssistantMessage(tool_calls=[call]),
            vf.ToolMessage(tool_call_id="c1", content="", name="bash"),
        ]
    )
    trace = SimpleNamespace(info={}, id="t1", agent=None, task=SimpleNamespace(data=task.data), state=vf.State())
    for hook in discover_decorated(task, "intercept"):
        replaced = asyncio.run(hook(request, trace))
        if replaced is not None:
            return replaced  # type: ignore[no-any-return]
    return None


def check_exports(env_id: str) -> None:
    preflight(env_id)


def check_limits(env_id: str) -> None:
    task = _task(env_id)
    spec = _declaration(env_id)
    allowed = spec.opt_out.loosen if spec.opt_out is not None else ()
    assert set(departures(task.data)) <= set(allowed), departures(task.data)
    assert task.data.agent_user == ISOLATION.agent_user
    assert getattr(task.config, "pids_limit", None) == ISOLATION.pids


def check_tool_gate(env_id: str) -> None:
    task = _task(env_id)
    package = env_id.replace("-", "_")
    for command in HACKS:
        denied = _gate(task, command.format(package=package))
        assert denied is not None and denied.messages[-1].content, f"{env_id} lets `{command}` run"
    assert _gate(task, HONEST) is None


def check_confined_by_construction(env_id: str) -> None:
    task = _task(env_id)
    assert isinstance(task, ArenaTask) and type(task).setup is ArenaTask.setup and type(task).NEEDS_CONTAINER


def check_declaration(env_id: str) -> None:
    spec = _declaration(env_id)
    assert spec.adversaries, f"{env_id} declares no adversary"
    assert all(callable(load_ref(ref)) for ref in spec.adversaries.values())


def check_adversaries(env_id: str) -> None:
    spec = _declaration(env_id)
    for name, ref in spec.adversaries.items():
        verdict = load_ref(ref)("dev", ADVERSARY_TASKS).verdict()
        assert verdict.status != "failed", f"{env_id} adversary {name}: {verdict.text}"


@pytest.fixture(autouse=True)
def _no_run_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)  # the hooks' audit records stay in the fake trace


@pytest.mark.parametrize("env_id", environment_ids())
def test_its_package_exports_one_taskset_and_a_lean_env(env_id: str) -> None:
    check_exports(env_id)


@pytest.mark.parametrize("env_id", environment_ids())
def test_its_boxes_get_the_hardened_limits_and_an_unprivileged_agent(env_id: str) -> None:
    check_limits(env_id)


@pytest.mark.parametrize("env_id", environment_ids())
def test_its_tool_gate_denies_what_every_box_denies_and_lets_honest_work_run(env_id: str) -> None:
    check_tool_gate(env_id)


@pytest.mark.parametrize("env_id", environment_ids())
def test_its_task_is_confined_by_construction(env_id: str) -> None:
    check_confined_by_construction(env_id)


@pytest.mark.parametrize("env_id", environment_ids())
def test_it_is_declared_with_adversaries_that_load(env_id: str) -> None:
    check_declaration(env_id)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", environment_ids())
def test_its_declared_adversaries_do_not_fail_on_dev(env_id: str) -> None:
    check_adversaries(env_id)


@pytest.fixture
def scaffold(tmp_path: Path) -> Iterator[str]:
    with scaffolded("every-env-probe", tmp_path) as (names, _folder):
        yield names.env_id


def test_a_scaffolded_environment_passes_every_check(scaffold: str) -> None:
    assert scaffold in environment_ids()
    for check in (
        check_exports,
        check_limits,
        check_tool_gate,
        check_confined_by_construction,
        check_declaration,
        check_adversaries,
    ):
        check(scaffold)
