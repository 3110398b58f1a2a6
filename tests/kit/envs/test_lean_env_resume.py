"""`--resume` keeps an episode the agent ended by breaking its own box: verifiers' own resume, with the
env's verdict, over saved rows of a real episode."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from verifiers.v1.cli.eval import resume
from verifiers.v1.utils.loaders import env_config_type, load_environment

from arena_kit.box.faults import AGENT_FAULT_STOPS
from arena_testkit.synthetic_runs import REAL_EPISODE

ENDS: dict[str, tuple[bool, str, str | None]] = {
    "finished": (True, "agent_completed", None),
    "box out of memory": (False, "boxoom_error", "BoxOomError"),
    "runner killed in its box": (False, "agentkilledbox_error", "AgentKilledBoxError"),
    "harness failed": (False, "harness_error", "HarnessError"),
    "box lost": (False, "boxlost_error", "BoxLostError"),
}
"""How a saved episode ended: (ok, stop condition, error type)."""


def _saved(task: Any, ok: bool, stop: str, error: str | None) -> dict[str, Any]:
    """The real saved episode, as an episode of `task` that ended so."""
    row: dict[str, Any] = copy.deepcopy(json.loads(REAL_EPISODE.read_text()))
    trace = row["traces"][0]
    for holder in (row, trace):
        holder["task"]["key"], holder["task"]["hash"] = task.key, task.hash
        holder["task"]["data"]["name"] = task.data.name
        holder["ok"] = ok
    row["id"] = trace["id"] = f"saved-{task.data.name}"
    trace["stop_condition"] = stop
    trace["errors"] = [{"type": error, "message": "m"}] if error else []
    return row


@pytest.fixture(scope="module")
def env() -> Any:
    return load_environment(
        env_config_type("fault-localisation").model_validate({"taskset": {"id": "fault-localisation"}})
    )


def test_the_agent_fault_stops_are_the_ones_the_platform_counts_as_the_agent_s() -> None:
    from arena.traces import AGENT_STOPS

    assert AGENT_FAULT_STOPS == set(AGENT_STOPS)


def test_resume_runs_again_only_what_failed_on_the_platform_s_side(env: Any, tmp_path: Path) -> None:
    tasks = list(env.taskset.take(len(ENDS)))
    rows = [_saved(task, *end) for task, end in zip(tasks, ENDS.values(), strict=True)]
    (tmp_path / "traces.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    plan = resume.load(tmp_path, tasks, 1, env.complete)
    owed = {name: n for name, (_, _, n) in zip(ENDS, plan, strict=True)}
    assert owed == {
        "finished": 0,
        "box out of memory": 0,
        "runner killed in its box": 0,
        "harness failed": 1,
        "box lost": 1,
    }
    kept = [
        json.loads(line)["traces"][0]["stop_condition"] for line in (tmp_path / "traces.jsonl").read_text().splitlines()
    ]
    assert kept == ["agent_completed", "boxoom_error", "agentkilledbox_error"]


def test_resume_runs_again_an_episode_that_failed_itself_after_its_agent_s_traces(env: Any, tmp_path: Path) -> None:
    """The agent's traces passed or broke their box, but the episode failed on its own: a hook raised
    after them, or the episode's deadline expired. Neither is the agent's result."""
    tasks = list(env.taskset.take(2))
    hook_failed = _saved(tasks[0], *ENDS["finished"])
    hook_failed["ok"] = False
    hook_failed["errors"] = [{"type": "EnvError", "message": "LeanEnv.run(): RuntimeError: removal failed"}]
    deadline = _saved(tasks[1], *ENDS["box out of memory"])
    deadline["is_timeout"] = True
    deadline["errors"] = [{"type": "TimeoutError", "message": "LeanEnv.run() exceeded its 60s deadline"}]
    (tmp_path / "traces.jsonl").write_text(json.dumps(hook_failed) + "\n" + json.dumps(deadline) + "\n")
    plan = resume.load(tmp_path, tasks, 1, env.complete)
    assert [n for _, _, n in plan] == [1, 1]
