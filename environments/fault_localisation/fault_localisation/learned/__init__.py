"""The learned shortcut: a tree model trained on train incidents ranks services from a fixed no-trace query plan."""

from __future__ import annotations

from arena_kit.policy import Policy
from fault_localisation.learned.policy import learned_script
from fault_localisation.observe import scripted

__all__ = ["LEARNED"]

LEARNED: dict[str, Policy] = {
    "shortcut_learned": scripted(learned_script("all")),
    "shortcut_learned_names": scripted(learned_script("names")),
    "shortcut_learned_counts_graph": scripted(learned_script("counts_graph")),
}
"""The gate's model (every feature) and its two ablations (names in lines; counts and call graph)."""
