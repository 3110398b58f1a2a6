"""The env a taskset exports to run its docker rollouts in a lean box (`[env] docker = "lean"`, the default) or
in verifiers' stock docker runtime (`docker = "stock"`, the reference).

The design decision: verifiers' runtime types are a closed list (`runtimes.make_runtime`), so the lean box is
handed to the rollout through the supported borrow seam, `Agent.run(task, runtime=box)`; this env provisions
the box exactly as the rollout would (the task's resolved runtime config and environment) and removes it
after scoring. Borrowing costs verifiers' per-agent retries (`[env.agent] retries`: a borrowed box is never
retried) and the box's start time moves out of the trace's `boot` phase; episode retries (`[env] retries`)
still apply. A taskset opts in by exporting `LeanEnv` from its package `__all__`.

With `[env] pool` set, boxes come from a warm pool (`arena_kit.runtimes.lean_docker.pool`): booted while the
eval starts up and refilled as rollouts claim them, so a box's create and start leave the rollout's
critical path, and its removal runs in the background once the rollout is scored. The pool learns each
spec's demand from the eval's plan (`slots`), so it boots no box no rollout will claim.

`--resume` keeps what `complete` accepts: a finished episode, and one the agent ended by breaking its own
box (`arena_kit.box.faults`), its outcome like any other, which a resume must not run again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator
from verifiers.v1.env import RunSlot
from verifiers.v1.runtimes import register

from arena_kit.box.faults import AGENT_FAULT_STOPS
from arena_kit.box.isolation import ISOLATION, box_limits, stock_box_options
from arena_kit.records import CONCURRENCY_ENV, POOL_INFO
from arena_kit.runtimes.file_watch import watch_box, watching
from arena_kit.runtimes.lean_docker.pool import BoxPool, BoxSpec
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
from arena_kit.verifiers_seam.bounds import bound_egress_proxy, bound_interception, stop_box_rollout
from arena_kit.verifiers_seam.env import planned_runtime_config, resolved_runtime_config, seat_harness_id

__all__ = ["AUTO_HEADROOM", "CONCURRENCY_ENV", "POOL_INFO", "LeanEnv", "LeanEnvConfig", "pool_size"]

logger = logging.getLogger(__name__)


class LeanEnvConfig(vf.SingleAgentEnvConfig):  # type: ignore[misc]  # verifiers ships no types
    docker: Literal["lean", "stock"] = "lean"
    """Which docker path a docker-runtime rollout takes: `lean` (Engine API, no route out, no helper
    containers) or `stock` (verifiers' own runtime, the reference). Other runtime types always run stock."""
    read_only: bool = True
    """A lean box's root filesystem is read-only; its writable places are bounded tmpfs mounts
    (`arena_kit.box.isolation.Isolation.writable`: /tmp, the workdir, the agent's home)."""
    pool: Annotated[int, Field(ge=0)] | Literal["auto"] = 0
    """Warm lean boxes kept per box spec: 0 none (each rollout boots its own box), N at most N,
    `auto` the eval's concurrency (`CONCURRENCY_ENV`; unset, the most rollouts seen claiming at once).
    Never more than the rollouts the eval still plans for that spec. Lean path only."""

    @model_validator(mode="after")
    def _pool_needs_lean(self) -> LeanEnvConfig:
        if self.pool != 0 and self.docker != "lean":
            raise ValueError(
                f'`pool = {self.pool!r}` needs `docker = "lean"` (the stock path boots its own boxes); set pool = 0'
            )
        return self


AUTO_HEADROOM = 2
"""Boxes an `auto` pool holds beyond the eval's concurrency: a box's boot and prestart (~0.4 s on a quiet
2-core machine) outlast a short rollout, so a pool of exactly the concurrency makes a one-at-a-time eval
wait for each refill (measured at c=1, 0 s model: the claim's wait 0.21 s; with 2 more, 0.01 s)."""


def pool_size(pool: int | str, environ: dict[str, str] | None = None, headroom: int = AUTO_HEADROOM) -> int | None:
    """The pool size `[env] pool` means: N, or for `auto` the eval's concurrency (`CONCURRENCY_ENV`)
    plus `headroom`, else None (learnt from the claims in flight). The pool warms to the concurrency
    alone before the eval's plan is known, so an eval of fewer rollouts boots none to spare.

    Raises:
        ValueError: `pool` is 0 (no pool).
    """
    if pool == 0:
        raise ValueError("pool = 0 is no pool")
    if pool != "auto":
        return int(pool)
    value = (os.environ if environ is None else environ).get(CONCURRENCY_ENV, "")
    return int(value) + headroom if value.isdigit() and int(value) > 0 else None


class LeanEnv(vf.Env[LeanEnvConfig]):  # type: ignore[misc]  # verifiers ships no types
    """One `agent` seat, like `SingleAgentEnv`, whose docker rollouts run in a lean box."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.pool: BoxPool | None = None
        """The warm pool while the env serves with `[env] pool` on (None otherwise)."""

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """verifiers' serving resources, and the warm pool: opened first, so its first boxes boot while
        the shared tool servers and the interception start; closed last (every box it holds removed). The
        file-table watch (`arena_kit.runtimes.file_watch`) runs around them all."""
        limits = box_limits(ISOLATION.pids)  # an eval this host's file table cannot hold fails here, with the numbers
        with watching(limits.per_box, stop_box_rollout):  # every box of the eval under the file-table watch, both paths
            async with self._serving():
                yield

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        bound_interception()
        bound_egress_proxy()
        if self.config.docker == "stock":
            from arena_kit.verifiers_seam.container_hooks import bound_box_reads
            from arena_kit.verifiers_seam.stock_box import add_box_options

            add_box_options(watch_box)
            bound_box_reads()
        if self.config.docker != "lean" or self.config.pool == 0:
            async with super().serving():
                yield
            return
        pool = self.pool = BoxPool(pool_size(self.config.pool))
        try:
            if pool.size is not None and (first := next(iter(self.taskset.take(1)), None)) is not None:
                if (spec := self._spec(first)) is not None:
                    pool.warm(spec, most=pool_size(self.config.pool, headroom=0))
            async with super().serving():
                yield
        finally:
            self.pool = None
            await pool.close()

    def complete(self, episode: vf.Episode) -> bool:
        """What `--resume` keeps: verifiers' verdict (`episode.ok`), and an episode the agent ended by
        breaking its box: some trace failed, and every failed one in an agent fault (`AGENT_FAULT_STOPS`).
        Scored 0 and never retried, it is the agent's result, and a resume that ran it again would hand
        the agent a second try. An episode whose traces all passed but which failed itself (a hook
        raised, its deadline expired) is the platform's failure, run again like any other."""
        if episode.ok:
            return True
        failed = [trace for trace in episode.traces if not trace.ok]
        return (
            bool(failed)
            and not episode.is_timeout
            and all(trace.stop_condition in AGENT_FAULT_STOPS for trace in failed)
        )

    def slots(self, task: vf.Task, n: int = 1) -> list[RunSlot]:
        """verifiers' plan of `n` episodes of `task`, told to the pool (its demand for the task's box spec)."""
        planned: list[RunSlot] = super().slots(task, n)
        if self.pool is not None and (spec := self._spec(task)) is not None:
            self.pool.plan(spec, n)
        return planned

    def _spec(self, task: vf.Task, config: Any = None) -> BoxSpec | None:
        """The box spec of `task`'s rollout (None: it takes no lean box)."""
        if config is None:
            try:
                config = planned_runtime_config(self, task)
            except ValueError:  # a task this seat cannot run: its rollout reports it, the pool skips it
                return None
        if getattr(config, "type", None) != "docker":
            return None
        user = getattr(task.data, "agent_user", None)
        pids = getattr(task.config, "pids_limit", None)
        limits = box_limits(pids if pids is not None else ISOLATION.pids)
        return BoxSpec(
            config,
            pids_limit=limits.pids if pids is not None else None,
            nofile=limits.nofile,
            writable=ISOLATION.writable(str(config.workdir or "/app"), user) if self.config.read_only else None,
            workdir_owner=user,
            own_uid=user if user == ISOLATION.agent_user else None,
            env=dict(task.runtime_env()),
            prestart=self._prestart_program(),
        )

    def _prestart_program(self) -> bytes | None:
        """What a pooled box starts ahead of its rollout: the `arena-bash` runner when the seat runs it
        (`arena_kit.runtimes.lean_docker.prestart`); an unpooled box starts nothing ahead."""
        if self.pool is None:
            return None
        from arena_kit.harnesses.arena_bash.harness import HARNESS_ID, RUNNER_SOURCE

        return RUNNER_SOURCE if seat_harness_id(self) == HARNESS_ID else None

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        agent = agents.agent
        config = resolved_runtime_config(self, agent, task)
        if self.config.docker == "stock" or getattr(config, "type", None) != "docker":
            with stock_box_options(getattr(task.config, "pids_limit", None) or ISOLATION.pids):
                await agent.run(task)
            return
        spec = self._spec(task, config)
        assert spec is not None
        if self.pool is not None:
            claim = await self.pool.claim(spec)
            claim.box.removed_after_rollout = True
            try:
                trace = await agent.run(task, runtime=claim.box)
                trace.info[POOL_INFO] = {**claim.info(), "prestarted": claim.box.ran_prestarted}
            finally:
                self.pool.release(claim.box)  # removed in the background: the episode is recorded meanwhile
            return
        box: LeanDockerRuntime = spec.box()
        box.removed_after_rollout = True
        register(box)  # the atexit backstop removes it if a signal cuts the `finally` short
        try:
            await box.start()
            await agent.run(task, runtime=box)
        finally:
            await box.stop()
