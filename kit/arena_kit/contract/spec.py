"""An environment's one declaration (`Environment`): its id, taskset, policies, adversaries and box, light enough for the host.

The platform reads it through the `arena.environments` entry point (the model server, `arena probe`,
`arena images build`), so this module imports nothing of verifiers: the taskset, the env and the
policies are named as `module:attribute` references and imported only when asked for. The package
exports what the declaration says verifiers resolves (`exports`, which always holds the lean env,
and `export` as the package's `__getattr__`); the preflight (`arena_kit.contract.check`) refuses a
package whose `__all__` differs, so no docker rollout falls back to the stock path by omission.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ID_PATTERN", "IMAGE_DIR", "ISOLATION_FIELDS", "LEAN_ENV", "Environment", "OptOut", "image_tag", "load_ref"]

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
"""A verifiers id Arena accepts: lower-case words joined by `-`; its package is the id with `_` for `-`."""
IMAGE_DIR = "image"
"""The folder of the environment's package holding its image's `Dockerfile` (package data)."""
IMAGE_TAG = "arena/{name}:latest"
LEAN_ENV = "arena_kit.envs.lean:LeanEnv"
ISOLATION_FIELDS = ("resources", "timeout", "network_allow", "agent_user")
"""The TaskData fields that carry the box's limits (`arena_kit.box.isolation.Isolation.task_fields`)."""
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class OptOut:
    """An explicit departure from the hardened box, written into every trace of the environment
    (`trace.info["arena_opt_out"]`) and logged at each task's setup.

    `confine=False` skips `arena_kit.box.isolation.confine` (no PIDs limit, the workdir stays root's);
    `loosen` names the isolation fields (`ISOLATION_FIELDS`) its tasks may set to other values than
    `arena_kit.box.isolation.ISOLATION`'s. A task that departs from the box without naming it here is
    refused when it is built."""

    reason: str
    confine: bool = True
    loosen: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("an OptOut needs a reason: say why this environment's box is not the hardened one")
        unknown = sorted(set(self.loosen) - set(ISOLATION_FIELDS))
        if unknown:
            raise ValueError(
                f"OptOut.loosen names {', '.join(unknown)}; the isolation fields are {', '.join(ISOLATION_FIELDS)}"
            )
        if self.confine and not self.loosen:
            raise ValueError("this OptOut departs from nothing: set confine=False or name the fields it loosens")


@dataclass(frozen=True)
class Environment:
    """What Arena needs to know of an environment, declared once in its package's `__init__.py`.

    Example (the whole `__init__.py` of an environment `demo-env`):

        ENVIRONMENT = Environment(id="demo-env", taskset="demo_env.taskset:DemoEnvTaskset",
                                  policies="demo_env.policies:POLICIES")
        __all__ = ["DemoEnvTaskset", "LeanEnv"]  # ENVIRONMENT.exports(), written out for linters

        def __getattr__(name: str) -> object:
            return ENVIRONMENT.export(name)
    """

    id: str
    """The verifiers id (`demo-env`); the package is the id with `_` for `-` (`demo_env`)."""
    taskset: str
    """`module:Class` of the taskset, an `arena_kit.contract.taskset.ArenaTaskset` subclass."""
    policies: str
    """`module:NAME` of the scripted policies (a `dict[str, Policy]`, or a function returning one):
    the oracle, the shortcuts, the cheaters and the standard four (`arena.probe_rules`)."""
    adversaries: Mapping[str, str] = field(default_factory=dict)
    """Name → `module:function` of each offline adversary (`arena_kit.contract.adversary.Adversary`)."""
    grader_terms: tuple[str, ...] = ()
    """Packages holding graded material besides the environment's own (e.g. a toolset's `log_search`):
    a shell command that reaches for one is denied at the tool gate (`arena_kit.rewrite.rules`)."""
    opt_out: OptOut | None = None
    """None: the hardened box (`arena_kit.box.isolation.ISOLATION`, confined). See `OptOut`."""
    env: str = LEAN_ENV
    """`module:Class` of the env the package exports: `LeanEnv` or a subclass of it."""

    def __post_init__(self) -> None:
        if not ID_PATTERN.match(self.id):
            raise ValueError(f"environment id {self.id!r} must be lower-case words joined by '-' (e.g. demo-env)")
        for name, ref in [
            ("taskset", self.taskset),
            ("policies", self.policies),
            ("env", self.env),
            *((f"adversaries[{key!r}]", value) for key, value in self.adversaries.items()),
        ]:
            if not _REF.match(ref):
                raise ValueError(f"Environment {self.id}: {name} must be 'module:attribute', got {ref!r}")
        for name, ref in (("taskset", self.taskset), ("policies", self.policies)):
            if ref.split(":")[0].split(".")[0] != self.package:
                raise ValueError(f"Environment {self.id}: {name} {ref!r} must be in its package {self.package!r}")

    @property
    def package(self) -> str:
        """The import package verifiers resolves the id to."""
        return self.id.replace("-", "_")

    def exports(self) -> list[str]:
        """The package's `__all__`: the taskset class and the env class, nothing else (verifiers
        resolves exactly one of each)."""
        return [self.taskset.split(":")[1], self.env.split(":")[1]]

    def export(self, name: str) -> Any:
        """The package's module `__getattr__`: imports the taskset or the env only when verifiers
        asks for it (the model server and the image builder never do).

        Raises:
            AttributeError: `name` is not an export.
        """
        for ref in (self.taskset, self.env):
            if ref.split(":")[1] == name:
                return load_ref(ref)
        raise AttributeError(f"module {self.package!r} has no attribute {name!r}")

    def load_policies(self) -> Any:
        """The policies reference's value (a mapping, or a function returning one; the caller checks)."""
        return load_ref(self.policies)

    def image_dir(self) -> Path | None:
        """The folder of the package's `image/Dockerfile`, found without importing the package (None: none)."""
        spec = importlib.util.find_spec(self.package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / IMAGE_DIR
            if (folder / "Dockerfile").is_file():
                return folder
        return None


def image_tag(name: str) -> str:
    """The tag `arena images build` gives an image (an environment's is named by its id), and so the
    image an environment's tasks run in unless a config names another (`arena_kit.box.image`)."""
    return IMAGE_TAG.format(name=name)


def load_ref(ref: str) -> Any:
    """The attribute a `module:attribute` reference names.

    Raises:
        ImportError, AttributeError: the module or the attribute is not there.
    """
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)
