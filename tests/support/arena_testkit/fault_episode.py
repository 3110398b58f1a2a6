"""Run a scripted policy against one fault-localisation task in process: the real Task setup and
scoring, the real LogSearchToolset methods, and verifiers' per-call state binding — no MCP
transport (tests/toolsets/log_search covers that through real sessions)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError
from verifiers.v1.mcp import server as vf_server

from arena_kit.gate.stats import Estimate, estimate
from arena_kit.policy import Answer, CallTool, Observation, Policy, RunShell, Step, ToolSpec, tool_matches
from fault_localisation.taskset import (
    FaultLocalisationConfig,
    FaultLocalisationTask,
    FaultLocalisationTaskConfig,
    FaultLocalisationTaskset,
)
from log_search.toolset import LogSearchConfig, LogSearchState, LogSearchToolset

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
        return self.trace.reward


def split_tasks(split: str, count: int, store_dir: Path, **knobs) -> list[FaultLocalisationTask]:
    config = FaultLocalisationConfig(id="fault-localisation", split=split, num_tasks=count,
                                     task=FaultLocalisationTaskConfig(store_dir=store_dir), **knobs)
    return list(FaultLocalisationTaskset(config))


def dev_tasks(count: int, store_dir: Path, **knobs) -> list[FaultLocalisationTask]:
    return split_tasks("dev", count, store_dir, **knobs)


def new_trace(task: FaultLocalisationTask) -> vf.Trace:
    return vf.Trace(task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
                    agent=vf.AgentInfo(config=vf.AgentConfig()), state=LogSearchState())


async def call_tool(toolset: LogSearchToolset, state: LogSearchState, name: str, arguments: dict) -> tuple[bool, str]:
    """One tool call with `state` bound as verifiers binds it; (is_error, text) as MCP would report."""
    token = vf_server._call_state.set(state)
    try:
        return False, await getattr(toolset, name)(**arguments)
    except ToolError as e:
        return True, f"Error executing tool {name}: {e}"
    finally:
        vf_server._call_state.reset(token)


async def run_episode(policy: Policy, task: FaultLocalisationTask, wrap: bool = True) -> Episode:
    """Drive `policy` until it answers; tool results are wrapped in harness text when `wrap`."""
    trace = new_trace(task)
    await task.setup(trace, runtime=NO_BOX)  # type: ignore[arg-type]
    toolset = LogSearchToolset(LogSearchConfig())
    episode = Episode(task, trace)
    offered = tuple(ToolSpec(f"log_search_{name}") for name in TOOLS)
    steps: list[Step] = []
    for _ in range(MAX_TURNS):
        obs = Observation(model="arena/fault-localisation/test", system=task.data.system_prompt or "",
                          prompt=task.data.prompt_text, tools=offered, steps=tuple(steps), dialect="chat")
        action = policy(obs)
        if isinstance(action, Answer):
            break
        if isinstance(action, RunShell):  # no box here: a shell call gets nothing back
            steps.append(Step(action, "bash: command not available in this driver"))
            continue
        assert isinstance(action, CallTool), f"unexpected action {action!r}"
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


def mean_rewards(policies: dict[str, Policy], tasks: list[FaultLocalisationTask]) -> dict[str, tuple[float, float]]:
    """Each policy's (mean reward, mean queries used) over `tasks`."""
    return {name: (row.estimate.mean, row.queries) for name, row in gate_table(policies, tasks).items()}


@dataclass(frozen=True)
class GateRow:
    estimate: Estimate
    """The mean over tasks with its one-sided bounds (`arena_kit.gate.stats.estimate`)."""
    queries: float


def gate_table(policies: dict[str, Policy], tasks: list[FaultLocalisationTask]) -> dict[str, GateRow]:
    """Each policy's reward estimate over `tasks` (one episode per task) and its mean queries."""
    table = {}
    for name, policy in policies.items():
        episodes = run_all(policy, tasks)
        table[name] = GateRow(estimate({e.task.data.id: [e.reward] for e in episodes}),
                              sum(e.trace.state.queries_used for e in episodes) / len(episodes))
    return table


MECHANISM_OFF = {"twins": 0, "shared_trigger": 0.0, "decoys": 0, "mimics": 0, "echo": 0.0, "verbatim_echo": 0.0, "callers_first": 0.0,
                 "quiet_root": 0.0, "precursor": 0.0, "off_path": 0.0, "stray_reachable": 0.0, "traces": False}
"""Each mechanism's knob setting that switches it off (the defaults switch each one on)."""
_NEEDS = {"verbatim_echo": "echo", "stray_reachable": "off_path"}
"""A mechanism that refines another needs that one on to show at all."""


def knob_settings() -> dict[str, dict]:
    """The difficulty table's rows: the default mix, each mechanism off alone, every mechanism
    off, and each mechanism alone on (traces stay on there: they help, they are not a trap)."""
    rows: dict[str, dict] = {"default": {}}
    rows |= {f"{name} off": {name: off} for name, off in MECHANISM_OFF.items()}
    traps = {k: v for k, v in MECHANISM_OFF.items() if k != "traces"}
    rows["all traps off"] = dict(traps)
    rows |= {f"only {name}": {k: v for k, v in traps.items() if k not in (name, _NEEDS.get(name))} for name in traps}
    return rows


def main() -> None:
    """`python -m arena_testkit.fault_episode [split] [tasks] [--knobs | --difficulty]`: the in-process
    gate table (every policy: mean, one-sided 95 % lower and upper bounds, mean queries), the per-knob
    difficulty table (oracle, exhaustive and the shortcuts) or the per-tier one (oracle, every
    shortcut, the investigations)."""
    import sys
    import tempfile

    from fault_localisation.policies import POLICIES

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    split, count = (args + ["dev"])[0], int((args + ["dev", "50"])[1])
    store = Path(tempfile.mkdtemp(prefix="fl-stores-"))
    if "--difficulty" in sys.argv:
        from fault_localisation.generate import DIFFICULTIES

        names = ["oracle", *(n for n in POLICIES if n.startswith(("shortcut_", "investigate_")))]
        tables = {tier: mean_rewards({n: POLICIES[n] for n in names}, split_tasks(split, count, store, difficulty=tier))
                  for tier in DIFFICULTIES}
        print("| policy | " + " | ".join(DIFFICULTIES) + " |")
        for n in names:
            print(f"| {n} | " + " | ".join(f"{tables[t][n][0]:.3f}" for t in DIFFICULTIES) + " |", flush=True)
        return
    if "--knobs" not in sys.argv:
        print(f"| policy | split | N | mean | lower | upper | queries |")
        for name, policy in POLICIES.items():
            row = gate_table({name: policy}, split_tasks(split, count, store))[name]
            est = row.estimate
            print(f"| {name} | {split} | {est.tasks} | {est.mean:.3f} | {est.lower:.3f} | {est.upper:.3f} | "
                  f"{row.queries:.1f} |", flush=True)
        return
    names = ["oracle", "exhaustive", *(n for n in POLICIES if n.startswith("shortcut_"))]
    print("| knobs | " + " | ".join(n.removeprefix("shortcut_") for n in names) + " |")
    for row, knobs in knob_settings().items():
        table = mean_rewards({n: POLICIES[n] for n in names}, split_tasks(split, count, store, **knobs))
        print(f"| {row} | " + " | ".join(f"{table[n][0]:.2f}" for n in names) + " |", flush=True)


if __name__ == "__main__":
    main()
