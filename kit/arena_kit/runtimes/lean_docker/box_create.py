"""Creating and starting one lean box: its network, labels and init, a start no cancel outlives, its workdir and port."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import docker
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.base import SERVICE_PORT
from verifiers.v1.utils.scope import run_scope

from arena_kit.runtimes.lean_docker.engine import ENGINE_ERRORS, engine_fault, exec_sync
from arena_kit.runtimes.lean_docker.hardening import MASKED_PATHS

__all__ = ["RUNTIME_LABEL", "create_box", "ensure_workdir", "lean_labels", "service_url"]

RUNTIME_LABEL = "arena.runtime"
"""`lean` on every container the lean runtime starts (a stock box has none): the path a box took."""


def lean_labels() -> dict[str, str]:
    """The labels of every container the lean runtime starts: its run's (what reaping by run finds) and the path's."""
    return {"verifiers.run": run_scope(), RUNTIME_LABEL: "lean"}


def create_box(
    api: docker.APIClient,
    name: str,
    image: str,
    *,
    restricted: bool,
    workdir: str | None,
    limits: Mapping[str, Any],
    labels: Mapping[str, str],
    environment: Mapping[str, str],
    stopped: Callable[[], bool],
) -> dict[str, Any]:
    """Create the box `name` of `image` with the host-config `limits` (`hardening.host_limits`), start its
    init (`sleep infinity`) and return the engine's inspection of it. A restricted box has no network at all;
    an unrestricted one the bridge, with the service port published on 127.0.0.1. `workdir` is made by the
    engine, as root (None: not made).

    Raises:
        SandboxError: `stopped()` turned true while the box was created or started (the box is removed).
        docker.errors.DockerException and the transport's errors: the engine failed a call.
    """
    if restricted:
        host_config = api.create_host_config(network_mode="none", **limits)
    else:
        host_config = api.create_host_config(
            network_mode="bridge", port_bindings={SERVICE_PORT: ("127.0.0.1", None)}, **limits
        )
    host_config["MaskedPaths"] = list(MASKED_PATHS)
    api.create_container(
        image,
        entrypoint=["sleep"],
        command=["infinity"],
        name=name,
        labels=dict(labels),
        environment=dict(environment),
        working_dir=workdir,
        host_config=host_config,
        ports=None if restricted else [SERVICE_PORT],
    )
    _removed_if_stopped(api, name, stopped)
    api.start(name)
    _removed_if_stopped(api, name, stopped)
    inspected: dict[str, Any] = api.inspect_container(name)
    return inspected


def _removed_if_stopped(api: docker.APIClient, name: str, stopped: Callable[[], bool]) -> None:
    """A start cancelled while this thread created the box (Ctrl-C, a deadline) has already run the
    runtime's `cleanup`, before the box existed: remove it here, so it cannot outlive its rollout.

    Raises:
        SandboxError: the box was stopped during its start.
    """
    if stopped():
        with contextlib.suppress(Exception):
            api.remove_container(name, force=True)
        raise SandboxError("box start: the box was stopped while it started")


def ensure_workdir(api: docker.APIClient, container: str, workdir: str, user: str) -> None:
    """Make a missing `workdir` and give it to `user`, the image's own (not root) user: the stock runtime's
    mkdir + chown, in one exec as root (the engine would make it root's).

    Raises:
        SandboxError: the engine failed the exec (`engine_fault`), or the box's mkdir or chown failed.
    """
    script = 'if [ ! -d "$1" ]; then mkdir -p "$1" && chown "$2" "$1"; fi'
    try:
        code, _, err = exec_sync(api, container, ["sh", "-c", script, "vf-workdir", workdir, user], {}, "0", None, None)
    except ENGINE_ERRORS as error:
        raise engine_fault("workdir setup", error) from error
    if code != 0:
        raise SandboxError(f"workdir setup: {err.decode(errors='replace').strip()}")


def service_url(inspected: Mapping[str, Any]) -> str:
    """The host's URL of an unrestricted box's service port, as the engine published it.

    Raises:
        SandboxError: the engine published no port for it.
    """
    ports = inspected["NetworkSettings"]["Ports"].get(f"{SERVICE_PORT}/tcp") or []
    host_port = ports[0]["HostPort"] if ports else ""
    if not str(host_port).isdigit():
        raise SandboxError(f"docker did not publish the service port: {ports!r}")
    return f"http://127.0.0.1:{host_port}"
