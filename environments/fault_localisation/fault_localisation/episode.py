"""Plays a scripted policy against fault-localisation tasks in process: the real Task setup and
scoring, the real LogSearchToolset methods with each call's state bound as verifiers binds it, and
no MCP transport or box (the docker gate and tests/toolsets/log_search cover those)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError

from arena_kit.policy import Answer, CallTool, Observation, Policy, RunShell, Step, ToolSpec, tool_matches
from arena_kit.verifiers_seam.toolset import bound_state
from fault_localisation.taskset import (
    FaultLocalisationConfig,
    FaultLocalisationTask,
    FaultLocalisationTaskConfig,
    FaultLocalisationTaskset,
)
from log_search.toolset import LogSearchConfig, LogSearchState, LogSearchToolset

__all__ = ["NO_BOX", "TOOLS", "Episode", "Scored", "call_tool", "new_trace", "run_all", "run_episode", "split_tasks"]

TOOLS = ("list_services", "search_logs", "count_logs", "budget", "submit_root_cause")
NO_BOX = SimpleNamespace(info=None)
"""The runtime an in-process episode hands to setup: there is no container to confine."""
MAX_TURNS = 80


@dataclass
class Episode:
    task: FaultLocalisationTask
    trace: vf.Trace
    results: list[str] = field(default_factory=list)
    """Every tool result text the policy saw."""

    @property
    def reward(self) -> float:
        reward: float = self.trace.reward
        return reward

    @property
    def state(self) -> LogSearchState:
        state: LogSearchState = self.trace.state
        return state


def split_tasks(split: str, count: int, store_dir: Path | None = None, **knobs: Any) -> list[FaultLocalisationTask]:
    """The split's first `count` tasks as the taskset builds them (prompt, seed, knobs, label)."""
    config = FaultLocalisationConfig(
        id="fault-localisation",
        split=split,
        num_tasks=count,
        task=FaultLocalisationTaskConfig(store_dir=store_dir),
        **knobs,
    )
    return list(FaultLocalisationTaskset(config))


def new_trace(task: FaultLocalisationTask) -> vf.Trace:
    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        state=LogSearchState(),
    )


async def call_tool(
    toolset: LogSearchToolset, state: LogSearchState, name: str, arguments: dict[str, Any]
) -> tuple[bool, str]:
    """One tool call with `state` bound as verifiers binds it; (is_error, text) as MCP would report."""
    with bound_state(state):
        try:
            text: str = await getattr(toolset, name)(**arguments)
            return False, text
        except ToolError as e:
            return True, f"Error executing tool {name}: {e}"


async def run_episode(policy: Policy, task: FaultLocalisationTask, wrap: bool = True) -> Episode:
    """Drive `policy` until it answers; tool results are wrapped in harness text when `wrap`."""
    trace = new_trace(task)
    await task.setup(trace, runtime=NO_BOX)
    toolset = LogSearchToolset(LogSearchConfig())
    episode = Episode(task, trace)
    offered = tuple(ToolSpec(f"log_search_{name}") for name in TOOLS)
    steps: list[Step] = []
    for _ in range(MAX_TURNS):
        obs = Observation(
            model="arena/fault-localisation/test",
            system=task.data.system_prompt or "",
            prompt=task.data.prompt_text,
            tools=offered,
            steps=tuple(steps),
            dialect="chat",
        )
        action = policy(obs)
        if isinstance(action, Answer):
            break
        if isinstance(action, RunShell):  # no box here: a shell call gets nothing back
            steps.append(Step(action, "bash: command not available in this driver"))
            continue
        if not isinstance(action, CallTool):
            raise TypeError(f"unexpected action {action!r}")
        name = next(t for t in TOOLS if tool_matches(f"log_search_{t}", action.name))
        _, text = await call_tool(toolset, trace.state, name, dict(action.arguments))
        if wrap:
            text = f"[tool log_search_{name} returned]\n{text}\n[end of tool result]"
        episode.results.append(text)
        steps.append(Step(action, text))
    await task.score(trace)
    return episode


def run_all(policy: Policy, tasks: list[FaultLocalisationTask]) -> list[Episode]:
    async def go() -> list[Episode]:
        return [await run_episode(policy, task) for task in tasks]

    return asyncio.run(go())


@dataclass(frozen=True)
class Scored:
    """A policy's or learner's episodes over a split: rewards by task, mean charged queries, and how
    often it named the users' root against chance (one over the faults reaching the reported edge)
    where there was one."""

    rewards: dict[str, list[float]]
    """Reward by task id (one episode each)."""
    queries: float
    hits: int
    """Incidents with a users' fault where it named the users' root."""
    chance: float
    """Sum over those incidents of one over the faults reaching the reported edge."""
    incidents: int
