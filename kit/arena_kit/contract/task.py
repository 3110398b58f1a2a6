# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False
"""The task half of the contract: a verifiers Task whose box is hardened unless it opts out, and whose rewrite rules are wired.

`ArenaData` defaults every isolation field to `arena_kit.box.isolation.ISOLATION` (limits, no egress, the
unprivileged agent), so a task that sets none of them gets the hardened box; `ArenaTask` gives its
data the environment's image (`arena_kit.box.image`), so no eval config names one. `ArenaTask.setup` is
the contract's own: it confines the box (`confine`: the PIDs limit, the workdir handed to the
agent), restores the image's baked harness scripts, and only then runs the environment's
`prepare`; a subclass cannot override `setup`, so no environment runs unconfined by omission. An
environment departs from the box only by declaring an `OptOut` in its `Environment`, and each
departure is written into the trace (`trace.info["arena_opt_out"]`). `arena_rules`, the
`@vf.intercept` hook, applies Arena's rewrite rules; the environment supplies only `held_out`
(and `admit`, to refuse a runtime it cannot serve before the box is touched).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

import verifiers.v1 as vf
from pydantic import Field

from arena_kit.box.baked import restore_baked_scripts
from arena_kit.box.image import task_image
from arena_kit.contract.spec import Environment
from arena_kit.box.isolation import ISOLATION, IsolationTaskConfig, confine
from arena_kit.rewrite.hook import apply_rules

__all__ = ["OPT_OUT_KEY", "ArenaData", "ArenaTask", "ArenaTaskConfig", "departures"]

logger = logging.getLogger(__name__)

OPT_OUT_KEY = "arena_opt_out"
"""The `trace.info` key of an environment's declared departure from the hardened box."""
_HARDENED = ISOLATION.task_fields()
_FINAL = ("setup", "arena_rules")
"""The contract's own methods: an environment adds to them through `prepare` and `held_out`."""


class ArenaData(vf.TaskData):
    """TaskData whose isolation fields default to the hardened box (`ISOLATION.task_fields()`)."""

    resources: vf.TaskResources = _HARDENED["resources"]
    timeout: vf.TaskTimeout = _HARDENED["timeout"]
    network_allow: list[str] = Field(default_factory=lambda: list(ISOLATION.network_allow))
    agent_user: str | None = ISOLATION.agent_user


class ArenaTaskConfig(IsolationTaskConfig):
    """Task config base of a taskset on the contract (`pids_limit`, `image`/`image_lock`, plus the environment's own knobs)."""


def departures(data: vf.TaskData) -> dict[str, Any]:
    """The isolation fields of `data` looser than the hardened box's (field → its value): more CPU or
    memory or none, a longer or no stage limit, a host the box may reach, another agent than
    `ISOLATION.agent_user`. A tighter value is no departure."""
    found: dict[str, Any] = {}
    hard_resources, resources = _HARDENED["resources"], data.resources
    if any(_looser(getattr(resources, name), getattr(hard_resources, name)) for name in ("cpu", "memory")):
        found["resources"] = resources.model_dump()
    hard_timeout, timeout = _HARDENED["timeout"], data.timeout
    if any(
        _looser(getattr(timeout, name), getattr(hard_timeout, name))
        for name in ("setup", "agent", "finalize", "scoring")
    ):
        found["timeout"] = timeout.model_dump()
    if set(data.network_allow) - set(ISOLATION.network_allow):
        found["network_allow"] = list(data.network_allow)
    if data.agent_user != ISOLATION.agent_user:
        found["agent_user"] = data.agent_user
    return found


def _looser(value: float | None, hardened: float) -> bool:
    return value is None or value > hardened


DataT = TypeVar("DataT", bound=ArenaData)
StateT = TypeVar("StateT", bound=vf.State)
ConfigT = TypeVar("ConfigT", bound=ArenaTaskConfig)


class ArenaTask(vf.Task[DataT, StateT, ConfigT], Generic[DataT, StateT, ConfigT], ABC):
    """A verifiers Task on Arena's contract. A subclass sets `ENVIRONMENT` (its package's
    declaration), writes `held_out` and, for its own set-up, `prepare`; it adds `@vf.reward`,
    `@vf.metric` and `toolsets` as any verifiers Task does.

    Raises (at class definition):
        TypeError: the subclass overrides `setup` or `arena_rules`.
    """

    ENVIRONMENT: ClassVar[Environment]
    NEEDS_CONTAINER: ClassVar[bool] = True
    data: DataT
    config: ConfigT

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _FINAL:
            if name in vars(cls):
                hook = "prepare" if name == "setup" else "held_out"
                raise TypeError(
                    f"{cls.__qualname__} overrides {name}, which the contract owns (it confines the box and "
                    f"applies the rewrite rules); put the environment's part in {hook}"
                )

    def __init__(self, data: DataT, config: ConfigT | None = None) -> None:
        """The task's box runs its environment's image unless `data` names another; the config's
        `image` or `image_lock` wins over both (`arena_kit.box.image.task_image`).

        Raises:
            TypeError: the class declares no `ENVIRONMENT`.
            ValueError: `data` departs from the hardened box in a field its environment's `OptOut` does not name.
        """
        spec = getattr(type(self), "ENVIRONMENT", None)
        if not isinstance(spec, Environment):
            raise TypeError(
                f"{type(self).__qualname__} declares no ENVIRONMENT: set `ENVIRONMENT = <package>.ENVIRONMENT` on it"
            )
        super().__init__(data, config)
        if self.data.image is None or self.config.image is not None or self.config.image_lock is not None:
            self.data = self.data.model_copy(update={"image": task_image(spec.id, self.config)})
        allowed = spec.opt_out.loosen if spec.opt_out is not None else ()
        undeclared = {name: value for name, value in departures(data).items() if name not in allowed}
        if undeclared:
            shown = ", ".join(f"{name}={value!r}" for name, value in undeclared.items())
            raise ValueError(
                f"{spec.id} task {data.name or data.idx!r} loosens the hardened box ({shown}) without declaring it: "
                "drop the value, or name the field in its Environment's OptOut(reason=..., loosen=(...))"
            )

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """`admit` the runtime, confine the box and restore the baked harness scripts, record any
        opt-out, then `prepare`.

        Raises:
            vf.TaskError: `admit` refused the runtime (nothing in the box was touched).
            vf.SandboxError: the box could not be confined (the rollout fails at setup, never runs unconfined).
        """
        self.admit(runtime)
        opt_out = self.ENVIRONMENT.opt_out
        user = self.data.agent_user
        if opt_out is None or opt_out.confine:
            await confine(runtime, self.config.pids_limit, user)
        await restore_baked_scripts(runtime, user)
        if opt_out is not None:
            trace.info[OPT_OUT_KEY] = {
                "reason": opt_out.reason,
                "confined": opt_out.confine,
                "loosened": departures(self.data),
            }
            logger.warning("%s runs outside the hardened box: %s", self.ENVIRONMENT.id, opt_out.reason)
        await self.prepare(trace, runtime)

    def admit(self, runtime: vf.Runtime) -> None:
        """Refuse a runtime the environment cannot serve, before the box is confined or touched (a
        host-side toolset that reaches only some runtimes' boxes, say): raise `vf.TaskError` in words.
        Synchronous, so it reads `runtime.info` but runs nothing in the box. Default: every runtime."""

    async def prepare(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """The environment's own set-up, in the confined box: write the agent's files, fill `trace.state`."""

    @abstractmethod
    async def held_out(self, trace: vf.Trace) -> Sequence[str]:
        """Strings no tool result may carry (answer keys, held-out values, host paths): a result
        that carries one is withheld and audited. Return `()` if the task holds nothing back."""

    @vf.intercept
    async def arena_rules(self, request: vf.Request, trace: vf.Trace) -> vf.Request | None:
        """Deny known reward hacks at the tool gate; withhold results carrying held-out material; audit each."""
        if not isinstance(request.messages[-1], vf.ToolMessage):
            return None  # no tool call or result to judge: `held_out` is not worth computing
        spec = self.ENVIRONMENT
        return await apply_rules(request, trace, await self.held_out(trace), spec.id, terms=spec.grader_terms)
