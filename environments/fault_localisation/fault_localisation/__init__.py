"""Fault localisation: find an incident's root cause by querying its logs under a budget."""

from fault_localisation.taskset import FaultLocalisationTaskset

__all__ = ["FaultLocalisationTaskset"]
