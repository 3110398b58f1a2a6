"""The bench's env: Arena's `LeanEnv`, whose docker path (`lean` or `stock`) the taskset option `docker` picks.

Arena's eval request (`arena.evalrun.EvalRequest`) writes no env-level keys, so a bench level cannot
set `[env] docker`; it sets `[env.taskset] docker` and this env adopts it. Unset, `[env] docker` rules.
"""

from __future__ import annotations

from typing import Any

from arena_kit.envs.lean import LeanEnv, LeanEnvConfig


class BenchEnv(LeanEnv):
    def __init__(self, config: Any) -> None:
        super().__init__(config)
        chosen = getattr(self.taskset.config, "docker", None)
        if chosen is not None:
            self.config: LeanEnvConfig = self.config.model_copy(update={"docker": chosen})
