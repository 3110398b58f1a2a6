"""Create-time options on a box of verifiers' stock docker runtime (its open-file limit, SysV segments, seccomp
profile and PIDs limit), and its box under the eval's watches.

verifiers 0.4.0 builds the stock box's `docker run` itself (`DockerRuntime.start`) from CPU, memory, GPU
and its network policy, with no option for ulimits, a seccomp profile or a PIDs limit, and neither can
change once the container runs. The seam adds the options a rollout's env sets (`options`, a context
variable, so only the rollouts that set them get them) to that one `docker run` (the box's: `--detach`;
the proxy helper's `run --rm` is left alone). The upstream change is
`docs/upstream/08-docker-box-options.patch` (`ContainerConfig.ulimits`, `security_opt`, `pids_limit`).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from arena_kit.errors import SeamError

__all__ = ["OPTIONS", "add_box_options", "options"]

OPTIONS: ContextVar[tuple[str, ...]] = ContextVar("arena_stock_box_options", default=())
"""`docker run` options for the stock boxes started in this context."""
_STARTED: dict[str, str] = {}
"""A box's name → its full container id, as its `docker run` printed it, until its start returns."""


@contextlib.contextmanager
def options(extra: list[str]) -> Iterator[None]:
    """Give the stock boxes started in this context (a rollout) the `docker run` options `extra`."""
    token = OPTIONS.set(tuple(extra))
    try:
        yield
    finally:
        OPTIONS.reset(token)


def add_box_options(watch_box: Callable[[str], None]) -> None:
    """Make verifiers' docker runtime add `OPTIONS` to the `docker run` of its box, and put each box it starts
    under the eval's watches: its egress proxy names the box (`bounds.BOX_ATTRIBUTE`), and `watch_box` gets
    the id its `docker run` printed (the file-table watch, `arena_kit.runtimes.file_watch.watch_box`). Once per
    process: a later call keeps the first `watch_box`.

    Raises:
        SeamError: `DockerRuntime.start` no longer runs the box through the module's `cli` with `--detach`.
    """
    from verifiers.v1.runtimes import docker as module

    from arena_kit.verifiers_seam.bounds import BOX_ATTRIBUTE

    source = inspect.getsource(getattr(module.DockerRuntime.start, "__wrapped__", module.DockerRuntime.start))
    if 'cli(\n            self.engine,\n            "run",' not in source or '"--detach"' not in source:
        raise SeamError(
            'verifiers\' DockerRuntime.start no longer runs its box with `cli(engine, "run", ..., "--detach")`: '
            "the stock box's limits (arena_kit.verifiers_seam.stock_box) cannot be set; re-read runtimes/docker"
        )
    if not getattr(module.cli, "__arena_seam__", False):
        original = module.cli

        async def cli(*argv: str, **kwargs: Any) -> Any:
            extra = OPTIONS.get()
            box = len(argv) > 2 and argv[1] == "run" and "--detach" in argv
            if extra and box:
                at = argv.index("--detach") + 1
                argv = (*argv[:at], *extra, *argv[at:])
            result = await original(*argv, **kwargs)
            if box and "--name" in argv and getattr(result, "exit_code", 1) == 0:
                _STARTED[argv[argv.index("--name") + 1]] = str(result.stdout).strip()
            return result

        cli.__arena_seam__ = True  # type: ignore[attr-defined]
        cli.__wrapped__ = original  # type: ignore[attr-defined]
        module.cli = cli
    if not getattr(module.DockerRuntime.start, "__arena_seam__", False):
        start = module.DockerRuntime.start

        async def watched_start(self: Any) -> None:
            try:
                await start(self)
            finally:
                box = _STARTED.pop(str(self._container), "")
            if box:  # the box's connection bound and the file-table watch stop its rollout (`bounds`, `file_watch`)
                if self._proxy is not None:
                    self._proxy.__dict__[BOX_ATTRIBUTE] = self.info.id
                watch_box(box)

        watched_start.__arena_seam__ = True  # type: ignore[attr-defined]
        watched_start.__wrapped__ = start  # type: ignore[attr-defined]
        module.DockerRuntime.start = watched_start
