"""Find and remove the containers Arena left behind, and nothing else.

Every Arena image carries the label `arena.managed=true`, which containers inherit, so even the
containers verifiers' docker runtime starts (with no labels of ours) are found; verifiers labels
them `verifiers.run=<run id>` and Arena sets that run id to the eval's run name. Labels survive a
SIGKILL of the process that started them, which `finally` blocks and atexit hooks do not.
"""

from __future__ import annotations

from arena.engine import list_containers, remove_containers
from arena.errors import UsageError

__all__ = ["leftovers", "reap"]


def leftovers(run: str | None = None) -> list[str]:
    """Names of Arena containers (of one run, or all), running or not."""
    return list_containers(run)


def reap(run: str | None = None, everything: bool = False) -> list[str]:
    """Force-remove Arena containers of `run` (or all of them with `everything`); returns names.

    Raises:
        UsageError: neither a run nor `everything` was given.
        DockerError: the engine refused a removal.
    """
    if not run and not everything:
        raise UsageError("say which containers to reap: --run ID (one eval's) or --all (every Arena container)")
    return remove_containers(leftovers(None if everything else run))
