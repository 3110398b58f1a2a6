"""verifiers' docker runtime internals `LeanDockerRuntime` builds on, under public names and checked when a lean box is made."""

from __future__ import annotations

import asyncio
from typing import Any

from verifiers.v1.runtimes.base import _ENSURE_UV
from verifiers.v1.runtimes.docker import DockerRuntime
from verifiers.v1.runtimes.docker.egress import EgressProxy

from arena_kit.errors import SeamError

__all__ = [
    "DOCKER_RUNTIME_ATTRIBUTES",
    "DOCKER_RUNTIME_METHODS",
    "ENSURE_UV",
    "SeamDockerRuntime",
    "check_docker_runtime",
]

ENSURE_UV: str = _ENSURE_UV
"""The shell that puts `uv` on PATH (installing it if missing), as `prepare_uv_script` runs it."""
DOCKER_RUNTIME_ATTRIBUTES = (
    "_container",
    "_proxy",
    "_cut",
    "_stopped",
    "_service_url",
    "_image_env",
    "_uv_interpreters",
    "_uv_script_locks",
)
"""Instance state `SeamDockerRuntime` exposes as `DockerRuntime` keeps it (box name, egress proxy, cut flag,
stopped flag, published URL, image env, uv caches)."""
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
        raise SeamError(
            f"verifiers' DockerRuntime has no {', '.join(missing)}: LeanDockerRuntime relies on them "
            "(arena_kit.verifiers_seam.docker_runtime); re-read verifiers' runtimes/docker and update the seam"
        )


class SeamDockerRuntime(DockerRuntime):  # type: ignore[misc]  # verifiers ships no types
    """verifiers' `DockerRuntime` whose private state a subclass reads and sets under public names, kept
    where verifiers keeps it (so verifiers' own methods, `expose`, `prepare_uv_script`, see the same box),
    and whose file reads (`_read`, verifiers' override point) go to `read_file`.

    Raises:
        SeamError: at construction, when verifiers no longer has a name this class relies on.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_docker_runtime(self)

    @property
    def container(self) -> str | None:
        """The box's container name (verifiers' `--name`, what every exec and the removal address); None before boot."""
        name: str | None = self._container
        return name

    @container.setter
    def container(self, name: str | None) -> None:
        self._container = name

    @property
    def image_env(self) -> dict[str, str]:
        """The image's environment (its `Config.Env`), whose NO_PROXY entries verifiers keeps in every exec."""
        env: dict[str, str] = self._image_env
        return env

    @image_env.setter
    def image_env(self, env: dict[str, str]) -> None:
        self._image_env = env

    @property
    def removed(self) -> bool:
        """The box was removed (or must never be: a borrowed handle); verifiers' `cleanup` then does nothing.
        verifiers' `_stopped`, not the base runtime's public `stopped` (teardown has begun), which `stop()`
        sets before it calls `cleanup`: a cleanup that read that one would never remove the box."""
        return bool(self._stopped)

    @removed.setter
    def removed(self, value: bool) -> None:
        self._stopped = value

    @property
    def service_url(self) -> str | None:
        """The host URL of the box's published service port (an unrestricted box's; verifiers' `expose` reads it)."""
        url: str | None = self._service_url
        return url

    @service_url.setter
    def service_url(self, url: str | None) -> None:
        self._service_url = url

    @property
    def proxy(self) -> EgressProxy | None:
        """verifiers' egress proxy serving the box (None before it is attached)."""
        proxy: EgressProxy | None = self._proxy
        return proxy

    @proxy.setter
    def proxy(self, proxy: EgressProxy | None) -> None:
        self._proxy = proxy

    @property
    def cut(self) -> bool:
        """Exec environments carry the proxy (verifiers' state after it cut a restricted box's egress)."""
        return bool(self._cut)

    @cut.setter
    def cut(self, value: bool) -> None:
        self._cut = value

    @property
    def uv_interpreters(self) -> dict[str, str]:
        """verifiers' cache of prepared uv scripts: script path in the box → its interpreter."""
        cache: dict[str, str] = self._uv_interpreters
        return cache

    @property
    def uv_script_locks(self) -> dict[str, asyncio.Lock]:
        """verifiers' per-script locks around preparing a uv script."""
        locks: dict[str, asyncio.Lock] = self._uv_script_locks
        return locks

    def stock_exec_argv(self, env: dict[str, str]) -> list[str]:
        """The `docker exec` argv verifiers' own runtime would run with `env` (its `--env` flags: proxy or NO_PROXY)."""
        argv: list[str] = DockerRuntime._exec(self, env)
        return argv

    def proxy_env(self) -> dict[str, str]:
        """The proxy variables verifiers puts in a restricted box's exec environment."""
        env: dict[str, str] = self._proxy_env()
        return env

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        """At most `max_bytes` of the box's file `path` (verifiers' `_read` contract: enforced at the source)."""
        data: bytes = await DockerRuntime._read(self, path, max_bytes)
        return data

    async def _read(self, path: str, max_bytes: int | None = None) -> bytes:
        return await self.read_file(path, max_bytes)
