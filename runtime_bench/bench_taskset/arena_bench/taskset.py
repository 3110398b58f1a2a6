"""The bench taskset's classes.

Every task is the same fixed job, so K tasks are K identical rollouts: the scripted policy runs
`echo` into a file, calls `stamp`, and answers. `toolset` places the MCP server per rollout
(`Task.toolsets`: one server process per rollout) or once per eval (`Taskset.toolsets`), which
is the placement the benchmark compares.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import verifiers.v1 as vf

from arena_kit.box.baked import restore_baked_scripts
from arena_kit.box.isolation import ISOLATION, IsolationTaskConfig, confine
from arena_bench.toolset import BenchState, BenchToolset

EXPECTED = "arena-bench-ok"
PROMPT = f"Write {EXPECTED} into bench.txt, call the stamp tool once, then say DONE."


LIMITS = {**ISOLATION.model_copy(update={"network_allow": ("*",)}).task_fields(), "agent_user": None}
"""Arena's limits, with the network left open at the task level and the agent left as the runtime's
default user, so the subprocess baseline (no container to confine, no users to switch to) still
runs; the docker levels close the network in their runtime config."""


class BenchData(vf.TaskData):
    path: str = "bench.txt"


class BenchTaskConfig(IsolationTaskConfig):
    toolset: Literal["shared", "task"] = "shared"
    """Where the `stamp` server runs: once per eval (`shared`) or once per rollout (`task`)."""


class BenchTask(vf.Task[BenchData, BenchState, BenchTaskConfig]):
    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        await confine(runtime, self.config.pids_limit, self.data.agent_user)
        await restore_baked_scripts(runtime)

    @classmethod
    def toolsets(cls, config: BenchTaskConfig) -> list[vf.Toolset]:
        return [BenchToolset(vf.ToolsetConfig())] if config.toolset == "task" else []

    @vf.reward(weight=1.0)
    async def wrote_file(self, runtime: vf.Runtime) -> float:
        try:
            data = await runtime.read(self.data.path)
        except vf.SandboxError:  # a missing file is a failed task, not a scoring error
            return 0.0
        return float(EXPECTED in data.decode(errors="replace"))

    @vf.metric
    async def stamps(self, trace: vf.Trace) -> float:
        return float(trace.state.stamps)


class BenchTasksetConfig(vf.TasksetConfig):
    task: BenchTaskConfig = BenchTaskConfig()
    num_tasks: int = 1
    """How many identical tasks (one rollout each)."""
    docker: Literal["lean", "stock"] | None = None
    """The docker path `BenchEnv` takes (None: the env's own `[env] docker`, lean by default)."""


class BenchTaskset(vf.Taskset[BenchTask, BenchTasksetConfig]):
    @classmethod
    def toolsets(cls, config: BenchTasksetConfig) -> list[vf.Toolset]:
        return [BenchToolset(vf.ToolsetConfig())] if config.task.toolset == "shared" else []

    def load(self) -> Iterator[BenchTask]:
        for i in range(self.config.num_tasks):
            yield BenchTask(BenchData(prompt=PROMPT, name=f"bench#{i}", **LIMITS), self.config.task)
