"""Arena's environment contract: one declaration an environment's box, rules, exports, policies and adversaries are wired from.

Light names here (no verifiers: the host reads them through the `arena.environments` entry point);
the verifiers classes an environment subclasses are in `arena_kit.contract.task` (`ArenaData`,
`ArenaTask`, `ArenaTaskConfig`) and `arena_kit.contract.taskset` (`ArenaTaskset`,
`ArenaTasksetConfig`); the preflight in `arena_kit.contract.check`. docs/new-environment.md walks
through all of it.
"""

from arena_kit.contract.adversary import Adversary, AdversaryRun, Split
from arena_kit.contract.spec import ISOLATION_FIELDS, Environment, OptOut, load_ref

__all__ = ["ISOLATION_FIELDS", "Adversary", "AdversaryRun", "Environment", "OptOut", "Split", "load_ref"]
