"""Find and remove the containers Arena left behind, and nothing else.

Every Arena image carries the label `arena.managed=true`, which containers inherit, so even the
containers verifiers' docker runtime starts (with no labels of ours) are found; verifiers labels
them `verifiers.run=<run id>` and Arena sets that run id to the eval's run name. Labels survive a
SIGKILL of the process that started them, which `finally` blocks and atexit hooks do not.
"""

from __future__ import annotations

from datetime import datetime, timezone

from arena.engine import MANAGED, RUN_LABEL, docker_client, list_containers, remove_containers
from arena.errors import UsageError

__all__ = ["leftovers", "leftovers_since", "reap", "reap_since"]


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


def leftovers_since(run: str, since: float) -> list[str]:
    """Names of the run's Arena containers created at or after `since` (epoch seconds): what one
    eval started, not what an earlier or concurrent run of the same name did before it."""
    filters: dict[str, str | list[str] | bool] = {"label": [MANAGED, f"{RUN_LABEL}={run}"]}
    return [
        str(c.name)
        for c in docker_client().containers.list(all=True, filters=filters)
        if _created(str(c.attrs.get("Created", ""))) >= since
    ]


def reap_since(run: str, since: float) -> list[str]:
    """Force-remove the containers `leftovers_since` names; returns the names removed.

    Raises:
        DockerError: the engine refused a removal.
    """
    return remove_containers(leftovers_since(run, since))


def _created(stamp: str) -> float:
    """Epoch seconds of Docker's `Created` (UTC, `...T15:17:45.123456789Z`); 0 when unreadable,
    so a container of unknown age is never taken for a new one."""
    head, _, fraction = stamp.rstrip("Z").partition(".")
    try:
        moment = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
    except ValueError:
        return 0.0
    return moment.timestamp() + float(f"0.{fraction if fraction.isdigit() else 0}")
