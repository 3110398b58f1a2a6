"""What `LeanEnv` needs of verifiers' env internals: the runtime config a rollout would resolve, warnings shared, the seat's harness."""

from __future__ import annotations

from typing import Any

from verifiers.v1.utils.compile import resolve_runtime_config

__all__ = ["planned_runtime_config", "resolved_runtime_config", "seat_harness_id"]


def _warned(env: Any) -> Any:
    from arena_kit.errors import SeamError

    warned = getattr(env, "_warned_resources", None)
    if warned is None:
        raise SeamError(
            "verifiers' Env has no _warned_resources: LeanEnv resolves a rollout's runtime config with it "
            "(arena_kit.verifiers_seam.env); re-read verifiers' env.py and update the seam"
        )
    return warned


def planned_runtime_config(env: Any, task: Any) -> Any:
    """The runtime config the env's `agent` seat would resolve for `task`, before any agent exists (a warm
    pool's spec): the seat's configured runtime (`[env.agent] runtime`, which verifiers' `resolve_agent`
    keeps) under verifiers' own per-task resolution.

    Raises:
        SeamError: the env keeps no `_warned_resources` (verifiers changed `Env`).
    """
    return resolve_runtime_config(env.config.agent.runtime, task, _warned(env))


def resolved_runtime_config(env: Any, agent: Any, task: Any) -> Any:
    """The runtime config `agent` would resolve for `task` inside `env` (verifiers' own resolution,
    with the env's once-per-run resource warnings, `Env._warned_resources`).

    Raises:
        SeamError: the env keeps no `_warned_resources` (verifiers changed `Env`).
    """
    return resolve_runtime_config(agent.runtime_config, task, _warned(env))


def seat_harness_id(env: Any) -> str | None:
    """The harness id the env's `agent` seat runs (its pin, else the taskset's default: verifiers'
    `Env._agent_harness`); None when this verifiers keeps neither where the seam reads them."""
    harness = getattr(env.config.agent, "harness", None) or getattr(env, "_default_harness", None)
    return getattr(harness, "id", None)
