"""Find and remove the containers Arena left behind, and nothing else.

Every Arena image carries the label `arena.managed=true`, which containers inherit, so even the
containers verifiers' docker runtime starts (with no labels of ours) are found; verifiers labels
them `verifiers.run=<run id>` and Arena sets that run id to the eval's run name. Labels survive a
SIGKILL of the process that started them, which `finally` blocks and atexit hooks do not.
"""

from __future__ import annotations

from docker.errors import APIError, NotFound

from arena.engine import docker_client
from arena.errors import PrerequisiteError

__all__ = ["MANAGED", "REAP_HINT", "leftovers", "reap"]

MANAGED = "arena.managed=true"
RUN_LABEL = "verifiers.run"
REAP_HINT = "arena reap --run {run}"


def leftovers(run: str | None = None) -> list[str]:
    """Names of Arena containers (of one run, or all), running or not."""
    filters = {"label": [MANAGED] + ([f"{RUN_LABEL}={run}"] if run else [])}
    return [c.name for c in docker_client().containers.list(all=True, filters=filters)]


def reap(run: str | None = None, everything: bool = False) -> list[str]:
    """Force-remove Arena containers of `run` (or all of them with `everything`); returns names."""
    if not run and not everything:
        raise PrerequisiteError("say which containers to reap: --run ID (one eval's) or --all (every Arena container)")
    removed = []
    for name in leftovers(None if everything else run):
        try:
            docker_client().containers.get(name).remove(force=True, v=True)
            removed.append(name)
        except NotFound:
            continue  # gone meanwhile: that is what we wanted
        except APIError as exc:
            if "removal of container" in str(exc) and "already in progress" in str(exc):
                continue
            raise
    return removed
