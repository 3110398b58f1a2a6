"""Fault localisation: find an incident's root cause by querying its logs under a budget."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena_kit.envs.lean import LeanEnv
    from fault_localisation.taskset import FaultLocalisationTaskset

__all__ = ["FaultLocalisationTaskset", "LeanEnv"]


def __getattr__(name: str) -> Any:
    # The taskset and the env pull in verifiers (~4 s); the model server and the grader import only
    # their own modules of this package, so both load when verifiers asks for them.
    if name == "FaultLocalisationTaskset":
        from fault_localisation.taskset import FaultLocalisationTaskset

        return FaultLocalisationTaskset
    if name == "LeanEnv":
        from arena_kit.envs.lean import LeanEnv

        return LeanEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
