"""Create-time options on a box of verifiers' stock docker runtime: its open-file limit, seccomp profile and PIDs limit.

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
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from arena_kit.verifiers_seam.errors import SeamError

__all__ = ["OPTIONS", "add_box_options", "options"]

OPTIONS: ContextVar[tuple[str, ...]] = ContextVar("arena_stock_box_options", default=())
"""`docker run` options for the stock boxes started in this context."""


@contextlib.contextmanager
def options(extra: list[str]) -> Iterator[None]:
    """Give the stock boxes started in this context (a rollout) the `docker run` options `extra`."""
    token = OPTIONS.set(tuple(extra))
    try:
        yield
    finally:
        OPTIONS.reset(token)


def add_box_options() -> None:
    """Make verifiers' docker runtime add `OPTIONS` to the `docker run` of its box (once per process).

    Raises:
        SeamError: `DockerRuntime.start` no longer runs the box through the module's `cli` with `--detach`.
    """
    from verifiers.v1.runtimes import docker as module

    if getattr(module.cli, "__arena_seam__", False):
        return
    source = inspect.getsource(module.DockerRuntime.start)
    if 'cli(\n            self.engine,\n            "run",' not in source or '"--detach"' not in source:
        raise SeamError("verifiers' DockerRuntime.start no longer runs its box with `cli(engine, \"run\", ..., \"--detach\")`: "
                        "the stock box's limits (arena_kit.verifiers_seam.stock_box) cannot be set; re-read runtimes/docker")
    original = module.cli

    async def cli(*argv: str, **kwargs: Any) -> Any:
        extra = OPTIONS.get()
        if extra and len(argv) > 2 and argv[1] == "run" and "--detach" in argv:
            at = argv.index("--detach") + 1
            argv = (*argv[:at], *extra, *argv[at:])
        return await original(*argv, **kwargs)

    cli.__arena_seam__ = True  # type: ignore[attr-defined]
    cli.__wrapped__ = original  # type: ignore[attr-defined]
    module.cli = cli
