"""Fault localisation: find an incident's root cause by querying its logs under a budget (an Arena environment)."""

from arena_kit.contract import Environment

ENVIRONMENT = Environment(
    id="fault-localisation",
    taskset="fault_localisation.taskset:FaultLocalisationTaskset",
    policies="fault_localisation.policies:POLICIES",
    adversaries={
        "learner_forest_windows": "fault_localisation.adversaries:forest_windows",
        "learner_logistic_names": "fault_localisation.adversaries:logistic_names",
    },
    grader_terms=("log_search",),
)
"""Everything Arena wires this environment from (`arena_kit.contract.spec.Environment`). The log store
and the toolset that answers from it are `log_search`'s: a shell command reaching for it is denied."""

__all__ = ["FaultLocalisationTaskset", "LeanEnv"]
"""What verifiers resolves: `ENVIRONMENT.exports()` (the preflight holds the two equal)."""


def __getattr__(name: str) -> object:
    # The taskset and the lean env pull in verifiers (~4 s); the model server and the grader import only
    # their own modules of this package, so both load when verifiers asks for them.
    return ENVIRONMENT.export(name)
