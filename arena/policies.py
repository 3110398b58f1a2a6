"""Generic policies and model-name resolution; environment policies come only via entry points.

The platform never imports an environment package by name. An environment declares itself through
its `arena.environments` entry point (`arena.installed`), named by its verifiers id; its
`Environment`'s `policies` reference names a `dict[str, Policy]` (or a zero-argument callable
returning one), and `arena/<env-id>/<policy>` resolves to that dict's entry. Names registered
explicitly (tests, `start_in_thread(policies=…)`) win over the built-ins, which win over entry points.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Callable, Mapping, Sequence

from arena import installed
from arena.errors import PolicyLoadError, UnknownPolicy
from arena_kit.policy import Action, Answer, Observation, Policy

__all__ = [
    "BUILTIN",
    "PolicyLoadError",
    "PolicyResolver",
    "UnknownPolicy",
    "echo",
    "model_name",
    "staller",
]

STALLER_TEXT = "I have looked at the task and have nothing further to add."

logger = logging.getLogger(__name__)


def echo(obs: Observation) -> Action:
    """Reply with the latest user text."""
    return Answer(obs.last_user or obs.prompt)


def staller(obs: Observation) -> Action:
    """End the rollout at once with a short text and no tool call: the do-nothing baseline."""
    return Answer(STALLER_TEXT)


BUILTIN: dict[str, Policy] = {"arena/echo": echo, "arena/staller": staller}


def model_name(env_id: str, policy: str) -> str:
    """The model name that selects `policy` for an environment (the staller is generic)."""
    return "arena/staller" if policy == "staller" else f"arena/{env_id}/{policy}"


EntryPoints = Callable[[], Sequence[importlib.metadata.EntryPoint]]


class PolicyResolver:
    """Maps a request's model name to a policy (see module docstring for the order)."""

    def __init__(self, policies: Mapping[str, Policy] | None = None, *, entry_points: EntryPoints | None = None):
        self._explicit = {**BUILTIN, **(policies or {})}
        self._entry_points = entry_points or installed.entry_points
        self._loaded: dict[str, dict[str, Policy]] = {}
        self._failed: dict[str, PolicyLoadError] = {}

    def resolve(self, model: str) -> Policy:
        """The policy for `model`.

        Raises:
            UnknownPolicy: nothing is registered under that name.
            PolicyLoadError: the environment's entry point is broken.
        """
        if model in self._explicit:
            return self._explicit[model]
        env_id, name = _split(model)
        if env_id is not None:
            policies = self._environment(env_id)
            if policies is not None and name in policies:
                return policies[name]
        raise UnknownPolicy(model, self.available())

    def available(self) -> list[str]:
        """Every resolvable model name; environments whose entry point fails are logged and left out."""
        names = list(self._explicit)
        for point in self._entry_points():
            try:
                policies = self._environment(point.name)
            except PolicyLoadError:
                continue  # logged once, when it first failed
            names += [f"arena/{point.name}/{name}" for name in policies or {}]
        return sorted(set(names))

    def environment_policies(self, env_id: str) -> list[str]:
        """The policy names an installed environment publishes (in its own order).

        Raises:
            UnknownPolicy: no environment with that id publishes policies.
            PolicyLoadError: its entry point is broken.
        """
        policies = self._environment(env_id)
        if policies is None:
            raise UnknownPolicy(f"arena/{env_id}/*", self.available())
        return list(policies)

    def environment_policy(self, env_id: str, name: str) -> Policy:
        """One policy an installed environment publishes.

        Raises:
            UnknownPolicy: the environment or the policy is not there.
            PolicyLoadError: its entry point is broken.
        """
        policies = self._environment(env_id)
        if policies is None or name not in policies:
            raise UnknownPolicy(f"arena/{env_id}/{name}", self.available())
        return policies[name]

    def _environment(self, env_id: str) -> dict[str, Policy] | None:
        if env_id in self._loaded:
            return self._loaded[env_id]
        if env_id in self._failed:
            raise self._failed[env_id]
        point = next((p for p in self._entry_points() if p.name == env_id), None)
        if point is None:
            return None
        try:
            self._loaded[env_id] = _load(point)
        except PolicyLoadError as e:
            logger.exception("environment %r: its policies cannot be used until the server restarts", env_id)
            self._failed[env_id] = e
            raise
        return self._loaded[env_id]


def _load(point: importlib.metadata.EntryPoint) -> dict[str, Policy]:
    """Load the policies an entry point's declaration names and check they are a `dict[str, Policy]`
    (directly or from a factory).

    Raises:
        PolicyLoadError: the declaration or its policies do not load, or have the wrong shape.
    """
    declared = installed.declaration(point)
    where = f"entry point {point.group}:{point.name} ({point.value}), its policies {declared.policies}"
    try:
        value = declared.load_policies()
        policies = value() if callable(value) and not isinstance(value, Mapping) else value
    except Exception as e:
        raise PolicyLoadError(f"{where} failed to load: {e!r}") from e
    if not isinstance(policies, Mapping) or not all(isinstance(k, str) and callable(v) for k, v in policies.items()):
        raise PolicyLoadError(f"{where} must give a dict of name -> policy, got {type(policies).__name__}")
    return dict(policies)


def _split(model: str) -> tuple[str | None, str]:
    """`arena/<env-id>/<policy>` -> (env-id, policy); (None, model) for any other shape."""
    prefix, _, rest = model.partition("/")
    env_id, _, name = rest.rpartition("/")
    if prefix != "arena" or not env_id or not name:
        return None, model
    return env_id, name
