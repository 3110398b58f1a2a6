"""fault_localisation.taskset: resolvable by id, held-out labels, host-side setup, reward wiring."""

import asyncio
import json
from dataclasses import asdict, replace
from importlib.metadata import entry_points
from pathlib import Path

import pydantic
import pytest
import verifiers.v1 as vf
from verifiers.v1.state import state_cls

import fault_localisation
from arena_kit.contract.task import ArenaTask, departures
from arena_kit.box.isolation import ISOLATION
from arena_kit.records import RUN_DIR_ENV
from arena_testkit.fault_episode import NO_BOX, dev_tasks, new_trace
from fault_localisation.catalogue import FAULT_KINDS
from fault_localisation.fault_stream import users_requests
from fault_localisation.generate import DIFFICULTIES, Knobs, iso, preset, split_seeds
from fault_localisation.grade import RULES
from fault_localisation.policies import POLICIES
from fault_localisation.prompt import task_prompt
from fault_localisation.taskset import (
    GENERATOR_MODULES,
    FaultLocalisationConfig,
    FaultLocalisationData,
    FaultLocalisationTask,
    FaultLocalisationTaskset,
    build_incident_store,
    incident_of,
)
from log_search.toolset import LogSearchState, LogSearchToolset, QueryRecord, Submission


def test_the_taskset_resolves_by_its_id_and_the_package_exports_it_and_its_env():
    assert fault_localisation.__all__ == ["FaultLocalisationTaskset", "LeanEnv"]
    config_type = vf.taskset_config_type("fault-localisation")
    config = config_type.model_validate({"id": "fault-localisation", "num_tasks": 2})
    taskset = vf.load_taskset(config)
    assert isinstance(taskset, FaultLocalisationTaskset)
    assert [t.data.name for t in taskset] == ["fault-localisation/dev#0", "fault-localisation/dev#1"]


def test_the_task_is_on_the_contract_and_its_box_the_hardened_one(tmp_path: Path):
    task = dev_tasks(1, tmp_path)[0]
    assert isinstance(task, ArenaTask) and FaultLocalisationTask.ENVIRONMENT is fault_localisation.ENVIRONMENT
    assert type(task).setup is ArenaTask.setup and FaultLocalisationTask.NEEDS_CONTAINER
    assert not departures(task.data) and task.data.agent_user == ISOLATION.agent_user
    assert task.config.pids_limit == ISOLATION.pids


def test_the_contracts_rules_withhold_the_label_and_the_store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)  # the audit records stay in the trace
    task = dev_tasks(1, tmp_path)[0]
    trace = new_trace(task)
    asyncio.run(task.setup(trace, runtime=NO_BOX))
    recorded = json.dumps(asdict(task.data.label))
    assert asyncio.run(task.held_out(trace)) == [recorded, trace.state.store_path]
    for leak in (recorded, f"opened {trace.state.store_path}"):
        call = vf.ToolCall(id="c1", name="bash", arguments=json.dumps({"command": "ls"}))
        request = vf.Request(
            messages=[
                vf.UserMessage(content="go"),
                vf.AssistantMessage(tool_calls=[call]),
                vf.ToolMessage(tool_call_id="c1", content=leak, name="bash"),
            ]
        )
        withheld = asyncio.run(task.arena_rules(request, trace))
        assert withheld is not None and leak not in str(withheld.messages[-1].content)
    assert trace.info["arena_rewrites"] and "log_search" in fault_localisation.ENVIRONMENT.grader_terms


def test_each_split_draws_from_its_own_seed_range():
    def seeds_of(split: str) -> set[int]:
        config = FaultLocalisationConfig(id="fault-localisation", split=split, num_tasks=5)
        return {t.data.seed for t in FaultLocalisationTaskset(config)}

    seeds = {split: seeds_of(split) for split in ("train", "dev", "test")}
    assert seeds["train"] == set(range(5))
    assert not seeds["train"] & seeds["dev"] and not seeds["dev"] & seeds["test"]


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_the_taskset_draws_the_seeds_the_generators_split_names(split: str):
    # The taskset takes the contract's split seeds; the generator's own (its mechanism mix, the
    # learners, the tests) must stay the same ranges, or a task would no longer be its incident.
    assert (
        split_seeds(split, 1_000)
        == FaultLocalisationConfig(id="fault-localisation", split=split, num_tasks=1_000).seeds()
    )


def test_tasks_carry_the_generation_knobs_and_the_held_out_label(tmp_path: Path):
    task = dev_tasks(1, tmp_path, services=12, lines=3_000, red_herrings=3, budget=9)[0]
    incident = incident_of(task.data)
    assert (task.data.knobs.services, task.data.knobs.lines, task.data.knobs.red_herrings) == (12, 3_000, 3)
    assert task.data.budget == 9
    assert task.data.label == incident.label


def test_task_data_survives_the_trace_round_trip_controls_included(tmp_path: Path):
    tasks = dev_tasks(40, tmp_path)
    assert any(t.data.label.service == "none" for t in tasks)
    for task in tasks:  # traces store task data without None fields; vf-replay rebuilds it from that
        wire = task.data.model_dump(mode="json", exclude_none=True)
        assert FaultLocalisationData.model_validate(wire) == task.data


def test_the_prompt_gives_window_budget_and_vocabulary_but_not_the_label(tmp_path: Path):
    for task in dev_tasks(8, tmp_path):
        incident = incident_of(task.data)
        prompt = task.data.prompt_text
        assert f"between {iso(incident.start_ms)} and {iso(incident.end_ms)} (UTC)" in prompt
        assert "a budget of 20 queries" in prompt and "submit_root_cause" in prompt
        assert f"A focused investigation needs about {RULES.free_queries}" in prompt
        assert all(kind.id in prompt for kind in FAULT_KINDS)
        label = task.data.label
        assert json.dumps(asdict(label)) not in prompt
        # The prompt does not depend on the users' fault at all (a word search would trip on a
        # service named like an English word, "returns"), and the edge it names is never the root.
        assert task_prompt(replace(incident, fault=None), task.data.budget, RULES.free_queries) == prompt
        assert label.service != incident.edge
        # What a report must carry, and how a control is answered.
        assert "search_logs(trace=<id>)" in prompt and "evidence: the trace ids (1 to 3)" in prompt
        assert 'submit service "none" with no fault kind, evidence or lines' in prompt
        assert "onset" not in prompt


def test_setup_builds_the_store_on_the_host_and_fills_the_rollout_state(tmp_path: Path):
    task = dev_tasks(1, tmp_path)[0]
    trace = new_trace(task)
    asyncio.run(task.setup(trace, runtime=NO_BOX))
    state: LogSearchState = trace.state
    incident = incident_of(task.data)
    assert Path(state.store_path).is_file() and Path(state.store_path).parent == tmp_path
    assert state.budget == 20 and state.queries_used == 0 and state.submission is None
    assert (state.window_start, state.window_end) == (iso(incident.start_ms), iso(incident.end_ms))
    assert [s.name for s in state.services] == [s.name for s in incident.services]
    assert state.fault_kinds == [k.id for k in FAULT_KINDS]
    # The same JSON must validate on the toolset side of the state channel.
    assert LogSearchState.model_validate_json(state.model_dump_json()) == state


def test_a_second_rollout_of_the_incident_reuses_the_built_store(tmp_path: Path):
    task = dev_tasks(1, tmp_path)[0]
    first, second = new_trace(task), new_trace(task)
    asyncio.run(task.setup(first, runtime=NO_BOX))
    built = Path(first.state.store_path).stat().st_mtime_ns
    asyncio.run(task.setup(second, runtime=NO_BOX))
    assert second.state.store_path == first.state.store_path
    assert Path(second.state.store_path).stat().st_mtime_ns == built


def scored_trace(task: FaultLocalisationTask, queries: int) -> vf.Trace:
    """A trace whose rollout charged `queries` queries, opened a users' failed request and
    submitted the right answer citing it."""
    label = task.data.label
    cited = sorted(users_requests(incident_of(task.data)))[0]
    trace = new_trace(task)
    asyncio.run(task.setup(trace, runtime=NO_BOX))
    trace.state.submission = Submission(service=label.service, fault_kind=label.fault_kind, evidence=[cited])
    trace.state.queries_used = queries
    opened = QueryRecord(tool="search_logs", args={"trace": cited}, matched=3, services=[label.service])
    trace.state.query_log = [opened] + [QueryRecord(tool="count_logs", args={}, matched=1) for _ in range(queries - 1)]
    asyncio.run(task.score(trace))
    return trace


def test_the_reward_grades_the_submission_and_records_why(tmp_path: Path):
    task = next(t for t in dev_tasks(5, tmp_path) if t.data.label.service != "none")
    trace = scored_trace(task, queries=12)
    assert trace.rewards["root_cause"].score == pytest.approx(1.0 - (12 - RULES.free_queries) * 0.04)
    assert trace.metrics["queries_used"] == 12
    assert trace.info["grade"]["reason"].startswith("service right, supported")
    assert trace.info["submission"]["service"] == task.data.label.service
    assert len(trace.info["queries"]) == 12


def test_an_offline_rescore_of_a_serialized_trace_gives_the_same_reward(tmp_path: Path):
    task = next(t for t in dev_tasks(5, tmp_path) if t.data.label.service != "none")
    live = scored_trace(task, queries=10)
    wire = vf.Trace[FaultLocalisationData, LogSearchState, vf.AgentConfig]  # as vf-replay reads traces back
    replayed = wire.model_validate_json(live.model_dump_json())  # trace.state is not serialized
    replayed.rewards.clear()
    assert not isinstance(replayed.state, LogSearchState)
    asyncio.run(task.score(replayed))
    assert (
        replayed.rewards["root_cause"].score
        == live.rewards["root_cause"].score
        == pytest.approx(1.0 - (10 - RULES.free_queries) * 0.04)
    )
    assert replayed.metrics["queries_used"] == 10


def test_no_submission_scores_zero(tmp_path: Path):
    task = dev_tasks(1, tmp_path)[0]
    trace = new_trace(task)
    asyncio.run(task.score(trace))
    assert trace.rewards["root_cause"].score == 0.0
    assert trace.info["grade"]["reason"] == "no root cause was submitted"


def test_the_task_and_the_toolset_declare_the_same_state_class():
    assert state_cls(FaultLocalisationTask) is state_cls(LogSearchToolset) is LogSearchState


def test_the_log_search_toolset_is_shared_across_the_eval():
    config = FaultLocalisationConfig(id="fault-localisation")
    [toolset] = FaultLocalisationTaskset.toolsets(config)
    assert isinstance(toolset, LogSearchToolset) and toolset.server_name == "log_search"
    assert FaultLocalisationTask.toolsets(config.task) == []


@pytest.mark.parametrize(
    "knob",
    [
        {"services": 7},
        {"services": 41},
        {"budget": 0},
        {"lines": 10},
        {"split": "x"},
        {"decoys": 9},
        {"echo": 1.5},
        {"callers_first": -0.1},
        {"quiet_root": 2},
        {"precursor": -1},
        {"off_path": 1.01},
        {"mimics": 7},
        {"verbatim_echo": -0.5},
        {"stray_reachable": 1.5},
        {"twins": 7},
        {"shared_trigger": 2.0},
    ],
)
def test_knobs_outside_their_range_are_refused(knob):
    with pytest.raises(pydantic.ValidationError):
        FaultLocalisationConfig(id="fault-localisation", **knob)


def test_the_environment_is_declared_with_its_policies_for_the_model_server():
    [entry] = [e for e in entry_points(group="arena.environments") if e.name == "fault-localisation"]
    assert entry.load() is fault_localisation.ENVIRONMENT
    assert fault_localisation.ENVIRONMENT.load_policies() is POLICIES
    assert {
        "oracle",
        "exhaustive",
        "impatient",
        "spammer",
        "cheater_read_store",
        "cheater_host_probe",
        "cheater_net_egress",
        "cheater_over_budget",
        "shortcut_grep_catalogue",
        "shortcut_none",
    } <= set(POLICIES)


def test_the_config_defaults_are_the_generators_default_mix(tmp_path: Path):
    assert dev_tasks(1, tmp_path)[0].data.knobs == Knobs()


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_a_difficulty_is_its_preset_and_a_knob_set_beside_it_overrides_the_preset(tmp_path: Path, difficulty: str):
    assert dev_tasks(1, tmp_path, difficulty=difficulty)[0].data.knobs == preset(difficulty)
    assert dev_tasks(1, tmp_path, difficulty=difficulty, twins=1)[0].data.knobs == preset(difficulty, twins=1)


def test_an_unknown_difficulty_is_refused_by_name():
    with pytest.raises(pydantic.ValidationError, match="easy"):
        FaultLocalisationConfig(id="fault-localisation", difficulty="brutal")
    with pytest.raises(ValueError, match="easy, medium, hard"):
        preset("brutal")


@pytest.mark.slow
def test_every_knob_reaches_the_task_and_the_store_key(tmp_path: Path):
    changed = {
        "decoys": 1,
        "echo": 0.1,
        "callers_first": 0.2,
        "quiet_root": 0.3,
        "precursor": 0.9,
        "off_path": 0.0,
        "traces": False,
        "mimics": 1,
        "verbatim_echo": 0.9,
        "stray_reachable": 0.1,
        "twins": 2,
        "shared_trigger": 0.0,
    }
    base = dev_tasks(1, tmp_path)[0]
    paths = set()
    for knob, value in changed.items():
        task = dev_tasks(1, tmp_path, **{knob: value})[0]
        assert getattr(task.data.knobs, knob) == value
        paths.add(build_incident_store(incident_of(task.data), tmp_path))
    paths.add(build_incident_store(incident_of(base.data), tmp_path))
    assert len(paths) == len(changed) + 1


def test_the_store_key_covers_every_generator_module():
    assert {m.__name__.rsplit(".", 1)[1] for m in GENERATOR_MODULES} >= {
        "background",
        "catalogue",
        "distractors",
        "edge",
        "fault_stream",
        "generate",
        "plan",
        "rng",
        "streams",
        "topology",
    }
