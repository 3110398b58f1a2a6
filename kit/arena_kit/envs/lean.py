"""The env a taskset exports to run its docker rollouts in a lean box (`[env] docker = "lean"`, the default) or
in verifiers' stock docker runtime (`docker = "stock"`, the reference).

The design decision: verifiers' runtime types are a closed list (`runtimes.make_runtime`), so the lean box is
handed to the rollout through the supported borrow seam, `Agent.run(task, runtime=box)`; this env provisions
the box exactly as the rollout would (the task's resolved runtime config and environment) and removes it
after scoring. Borrowing costs verifiers' per-agent retries (`[env.agent] retries`: a borrowed box is never
retried) and the box's start time moves out of the trace's `boot` phase; episode retries (`[env] retries`)
still apply. A taskset opts in by exporting `LeanEnv` from its package `__all__`.
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf
from verifiers.v1.runtimes import register

from arena_kit.isolation import ISOLATION
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
from arena_kit.verifiers_seam.env import resolved_runtime_config

__all__ = ["LeanEnv", "LeanEnvConfig"]


class LeanEnvConfig(vf.SingleAgentEnvConfig):  # type: ignore[misc]  # verifiers ships no types
    docker: Literal["lean", "stock"] = "lean"
    """Which docker path a docker-runtime rollout takes: `lean` (Engine API, no route out, no helper
    containers) or `stock` (verifiers' own runtime, the reference). Other runtime types always run stock."""
    read_only: bool = True
    """A lean box's root filesystem is read-only; its writable places are bounded tmpfs mounts
    (`arena_kit.isolation.Isolation.writable`: /tmp, the workdir, the agent's home)."""


class LeanEnv(vf.Env[LeanEnvConfig]):  # type: ignore[misc]  # verifiers ships no types
    """One `agent` seat, like `SingleAgentEnv`, whose docker rollouts run in a lean box."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        agent = agents.agent
        config = resolved_runtime_config(self, agent, task)
        if self.config.docker == "stock" or getattr(config, "type", None) != "docker":
            await agent.run(task)
            return
        user = getattr(task.data, "agent_user", None)
        box = LeanDockerRuntime(
            config, pids_limit=getattr(task.config, "pids_limit", None),
            writable=ISOLATION.writable(str(config.workdir or "/app"), user) if self.config.read_only else None,
            workdir_owner=user,
        )
        box.env = dict(task.runtime_env())
        register(box)  # the atexit backstop removes it if a signal cuts the `finally` short
        try:
            await box.start()
            await agent.run(task, runtime=box)
        finally:
            await box.stop()
