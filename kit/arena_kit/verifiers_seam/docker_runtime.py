"""verifiers' docker runtime internals `LeanDockerRuntime` builds on, checked when a lean box is made."""

from __future__ import annotations

from typing import Any

from verifiers.v1.runtimes.base import _ENSURE_UV
from verifiers.v1.runtimes.docker import DockerRuntime

from arena_kit.verifiers_seam.errors import SeamError

__all__ = ["DOCKER_RUNTIME_ATTRIBUTES", "DOCKER_RUNTIME_METHODS", "ENSURE_UV", "check_docker_runtime"]

ENSURE_UV: str = _ENSURE_UV
"""The shell that puts `uv` on PATH (installing it if missing), as `prepare_uv_script` runs it."""
DOCKER_RUNTIME_ATTRIBUTES = (
    "_container", "_proxy", "_cut", "_service_url", "_image_env", "_uv_interpreters", "_uv_script_locks",
)
"""Instance state `LeanDockerRuntime` sets or reads as `DockerRuntime` keeps it (box name, egress proxy,
cut flag, published URL, image env, uv caches)."""
DOCKER_RUNTIME_METHODS = ("_exec", "_proxy_env", "_read")
"""Methods it calls (`_exec`: the `docker exec` argv its exec env is read off; `_proxy_env`) or overrides (`_read`)."""


def check_docker_runtime(runtime: Any) -> None:
    """Check that a freshly made `DockerRuntime` (sub)instance has every private name the lean runtime relies on.

    Raises:
        SeamError: one is missing (verifiers changed its docker runtime), naming it and the seam.
    """
    missing = [name for name in DOCKER_RUNTIME_ATTRIBUTES if not hasattr(runtime, name)]
    missing += [name for name in DOCKER_RUNTIME_METHODS if not callable(getattr(DockerRuntime, name, None))]
    if missing:
        raise SeamError(f"verifiers' DockerRuntime has no {', '.join(missing)}: LeanDockerRuntime relies on them "
                        "(arena_kit.verifiers_seam.docker_runtime); re-read verifiers' runtimes/docker and update the seam")
