"""Run an environment's scripted policies down one rollout path (a harness on a docker path) and reduce
each rollout to what fidelity is judged on: the messages (tool calls with ids and arguments, tool
results as the model saw them), the score, the stop, the errors, the info and the rewrite audits.

Rollouts go through verifiers' own machinery (`Env.serving()` + `Env.run_slot`, what `vf-eval`
runs per slot) in this process, so the env, its shared tool servers and the interception come up
once per path rather than once per policy: a whole sweep costs two start-ups, not seventy.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, Literal

import verifiers.v1 as vf
from verifiers.v1.clients import ModelContext
from verifiers.v1.env import RunSlot

from arena.evalrun import API_KEY_VAR, EvalRequest, eval_config
from arena.policies import model_name
from arena_kit.records import POOL_INFO
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

AUDIT_VOLATILE = ("id", "time", "rollout", "run", "harness")
"""Audit-record fields that differ between any two runs (ids, clocks) or name the harness itself."""

Docker = Literal["lean", "stock"]


@dataclass(frozen=True)
class RolloutPath:
    """One way to roll out: a harness id on a docker path (`[env] docker`), its boxes from a warm pool of
    `pool` boxes (`[env] pool`; lean path only) or booted per rollout (0)."""

    harness: str
    docker: Docker
    pool: int = 0


REFERENCE = RolloutPath("bash", "stock")
"""Verifiers' own bash harness on verifiers' own docker runtime."""
LEAN = RolloutPath("arena-bash", "lean")
"""Arena's lean harness in a lean box: what the environments run by default."""
POOLED = RolloutPath("arena-bash", "lean", pool=2)
"""The same, each box claimed from a warm pool."""


@dataclass(frozen=True)
class Rollout:
    policy: str
    task: str
    messages: list[dict[str, Any]]
    parents: list[Any]
    rewards: dict[str, Any]
    metrics: dict[str, Any]
    stop: str | None
    ok: bool
    errors: list[str]
    info: dict[str, Any]
    audits: list[dict[str, Any]]
    request_rewrites: list[Any]
    pooled: bool = False
    """Its box was claimed warm from the pool (how the box was had, not what the rollout did: never compared)."""
    prestarted: bool = False
    """Its harness ran the runner its pooled box prestarted, not an exec (never compared either)."""

    @property
    def reward(self) -> float:
        return float(sum((s.get("score") or 0.0) * s.get("weight", 1.0) for s in self.rewards.values()))

    def tool_calls(self) -> list[tuple[str, str]]:
        return [(c["name"], c["arguments"]) for m in self.messages for c in m.get("tool_calls") or []]

    def tool_results(self) -> list[Any]:
        return [m.get("content") for m in self.messages if m.get("role") == "tool"]


def reduce(policy: str, trace: dict[str, Any], episode_errors: list[dict[str, Any]]) -> Rollout:
    info = dict(trace.get("info") or {})
    claim = info.pop(POOL_INFO, None) or {}
    audits = [{k: v for k, v in record.items() if k not in AUDIT_VOLATILE} for record in info.pop("arena_rewrites", [])]
    data = (trace.get("task") or {}).get("data") or {}
    return Rollout(
        policy=policy,
        task=str(data.get("name") or data.get("idx")),
        messages=[node["message"] for node in trace.get("nodes") or []],
        parents=[node.get("parent") for node in trace.get("nodes") or []],
        rewards=trace.get("rewards") or {},
        metrics=trace.get("metrics") or {},
        stop=trace.get("stop_condition"),
        ok=bool(trace.get("ok")),
        errors=[str(e.get("message", ""))[:300] for e in [*episode_errors, *(trace.get("errors") or [])]],
        info=info,
        audits=audits,
        request_rewrites=list(trace.get("request_rewrites") or []),
        pooled=bool(claim.get("pooled")),
        prestarted=bool(claim.get("prestarted")),
    )


FIELDS = ("messages", "parents", "rewards", "metrics", "stop", "ok", "errors", "info", "audits", "request_rewrites")
"""What fidelity compares of two rollouts."""


def differences(
    ref: Rollout, other: Rollout, canonical: Callable[[list[dict[str, Any]]], list[Any]] = lambda messages: messages
) -> list[str]:
    """Where `other` differs from `ref`, one line per field; messages are compared in `canonical` form."""
    out = [
        f"{name}: ref={str(getattr(ref, name))[:300]} other={str(getattr(other, name))[:300]}"
        for name in FIELDS
        if name != "messages" and getattr(ref, name) != getattr(other, name)
    ]
    want, got = canonical(ref.messages), canonical(other.messages)
    if want != got:
        index = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
        out.append(
            f"messages differ from #{index}: ref={str(want[index : index + 1])[:600]} other={str(got[index : index + 1])[:600]}"
        )
    return out


@dataclass(frozen=True)
class Sweep:
    rollouts: list[Rollout]
    lean_boxes: list[str]
    """The short container ids of the lean boxes booted during the sweep: one per rollout on the lean path, none
    on the stock one."""

    @property
    def pooled(self) -> int:
        """Rollouts whose box was claimed warm from the pool."""
        return sum(r.pooled for r in self.rollouts)

    @property
    def prestarted(self) -> int:
        """Rollouts whose harness ran the runner its pooled box prestarted."""
        return sum(r.prestarted for r in self.rollouts)


def run_policies(
    env_id: str, path: RolloutPath, policies: list[str], server_url: str, tasks: int = 1, concurrency: int = 2
) -> Sweep:
    """Every policy on the first `tasks` dev tasks of `env_id`, down `path`."""
    os.environ.setdefault(API_KEY_VAR, "arena-local")
    request = EvalRequest(
        taskset=env_id,
        harness=path.harness,
        model="unused",
        image=f"arena/{env_id}:latest",
        base_url=server_url,
        run_name="lean-fidelity",
        taskset_args={"split": "dev"},
    )
    config = eval_config(request)
    config["env"]["docker"] = path.docker
    if path.pool:
        config["env"]["pool"] = path.pool
    return asyncio.run(_run(config, env_id, policies, tasks, concurrency))


async def _run(config: dict[str, Any], env_id: str, policies: list[str], tasks: int, concurrency: int) -> Sweep:
    env = vf.load_environment(vf.resolve_env_config(config["env"]))
    if getattr(env.config, "docker", None) != config["env"]["docker"]:
        raise AssertionError(
            f"{env_id} cannot take the {config['env']['docker']} docker path: its env is "
            f"{type(env).__name__}, which does not export LeanEnv"
        )
    chosen = list(env.taskset.take(tasks))
    client = vf.EvalClientConfig.model_validate(config["client"])
    semaphore = asyncio.Semaphore(concurrency)

    async def one(policy: str, slot: RunSlot) -> Rollout:
        ctx = ModelContext(model=model_name(env_id, policy), client=client)
        episode = await env.run_slot(slot, ctx, semaphore)
        dumped = json.loads(episode.model_dump_json())
        traces = dumped.get("traces") or [{}]
        return reduce(policy, traces[0], dumped.get("errors") or [])

    booted: list[str] = []
    boot = LeanDockerRuntime.boot  # every lean box boots once: started for its rollout or warmed by the pool

    async def counted_boot(box: LeanDockerRuntime) -> None:
        await boot(box)
        booted.append(box.info.id)

    LeanDockerRuntime.boot = counted_boot  # type: ignore[method-assign]  # counts the path taken, test-only
    try:
        async with env.serving():
            # Planned as vf-eval plans them (`Env.slots`): a pool learns its demand from the plan.
            planned = [(p, slot) for p in policies for t in chosen for slot in env.slots(t, 1)]
            rollouts = list(await asyncio.gather(*(one(p, slot) for p, slot in planned)))
    finally:
        LeanDockerRuntime.boot = boot  # type: ignore[method-assign]
    return Sweep(rollouts, booted)
