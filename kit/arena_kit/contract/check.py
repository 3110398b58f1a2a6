"""What keeps an installed environment package from running the way Arena runs it: a preflight, in words.

`export_problems` holds every environment to what verifiers resolves from its package: exactly one
Taskset and an Env that is a `LeanEnv` (without one, docker rollouts silently take verifiers' stock
path, whose box Arena cannot bound the same way). `contract_problems` holds an environment declared
through `arena.environments` to the contract: its taskset and task on `arena_kit.contract`, the
task bound to the same declaration, its adversaries callable. `arena probe` refuses an environment
with a problem before it starts an eval; the cross-environment test holds every installed one to it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, get_args

import verifiers.v1 as vf

from arena_kit.contract.spec import Environment, load_ref
from arena_kit.contract.task import ArenaTask
from arena_kit.contract.taskset import ArenaTaskset
from arena_kit.envs.lean import LeanEnv

__all__ = ["contract_problems", "export_problems", "task_type"]


def export_problems(package: ModuleType) -> list[str]:
    """Problems with what the package's `__all__` exports to verifiers ([] when none)."""
    names = getattr(package, "__all__", None)
    if not isinstance(names, (list, tuple)):
        return [f"package {package.__name__} has no __all__: verifiers resolves a taskset and an env from it"]
    exported: list[Any] = []
    for name in names:
        try:
            exported.append(getattr(package, name))
        except Exception as error:  # an export that fails to import is the problem to report
            return [f"package {package.__name__} cannot export {name!r}: {error!r}"]
    classes = [value for value in exported if isinstance(value, type)]
    problems = []
    tasksets = [c for c in classes if issubclass(c, vf.Taskset)]
    if len(tasksets) != 1:
        problems.append(
            f"package {package.__name__} exports {len(tasksets)} Taskset classes; verifiers needs exactly one"
        )
    envs = [c for c in classes if issubclass(c, vf.Env)]
    if not any(issubclass(c, LeanEnv) for c in envs):
        problems.append(
            f"package {package.__name__} exports no LeanEnv (its __all__: {', '.join(map(str, names))}): its docker "
            "rollouts would take verifiers' stock path; declare it with arena_kit.contract.Environment, "
            "whose exports() include the lean env"
        )
    return problems


def task_type(taskset: type) -> type | None:
    """The Task class a Taskset class is parameterised with (None: not found)."""
    for klass in taskset.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, vf.Task):
                    return arg
    return None


def contract_problems(spec: Environment) -> list[str]:
    """Problems with an environment's declaration against the contract ([] when none)."""
    try:
        taskset = load_ref(spec.taskset)
        env = load_ref(spec.env)
        adversaries = {name: load_ref(ref) for name, ref in spec.adversaries.items()}
    except (ImportError, AttributeError) as error:
        return [f"{spec.id}: a reference of its Environment does not resolve: {error!r}"]
    problems = []
    exported = getattr(importlib.import_module(spec.package), "__all__", None)
    if exported is None or sorted(exported) != sorted(spec.exports()):
        problems.append(
            f"{spec.id}: package {spec.package} exports {exported!r}, its Environment declares {spec.exports()!r} "
            "(set __all__ to the declared exports)"
        )
    if not (isinstance(env, type) and issubclass(env, LeanEnv)):
        problems.append(f"{spec.id}: env {spec.env} is not a LeanEnv")
    if not (isinstance(taskset, type) and issubclass(taskset, ArenaTaskset)):
        return [*problems, f"{spec.id}: taskset {spec.taskset} is not an arena_kit.contract.taskset.ArenaTaskset"]
    task = task_type(taskset)
    if task is None or not issubclass(task, ArenaTask):
        problems.append(f"{spec.id}: taskset {spec.taskset} yields no ArenaTask")
    elif getattr(task, "ENVIRONMENT", None) != spec:
        problems.append(f"{spec.id}: its task {task.__qualname__} declares another ENVIRONMENT than its package's")
    problems += [
        f"{spec.id}: adversary {name} ({spec.adversaries[name]}) is not callable"
        for name, adversary in adversaries.items()
        if not callable(adversary)
    ]
    return problems
