"""The stock path's create-time limits (`arena_kit.verifiers_seam.stock_box`): the options a rollout's context
sets reach verifiers' `docker run` of its box, and nothing else (the proxy helper's `run --rm`, another
rollout's box, a box started outside any context)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from verifiers.v1.runtimes import docker as module

from arena_kit.box.isolation import box_limits, stock_box_options
from arena_kit.runtimes.file_table import SHM_SEGMENTS
from arena_kit.runtimes.file_watch import watch_box, watching
from arena_kit.runtimes.seccomp import profile_path
from arena_kit.verifiers_seam import stock_box
from arena_kit.verifiers_seam.bounds import BOX_ATTRIBUTE, stop_box_rollout


def test_only_the_box_run_of_a_rollout_that_set_them_gets_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []

    async def cli(*argv: str, **kwargs: Any) -> None:
        seen.append(argv)

    monkeypatch.setattr(module, "cli", cli)
    monkeypatch.setattr(module.DockerRuntime, "start", module.DockerRuntime.start)  # restored after the test
    stock_box.add_box_options(watch_box)
    box = ("docker", "run", "--label", "x", "--detach", "--cpus", "1", "--name", "vf-1", "img", "infinity")
    helper = ("docker", "run", "--label", "x", "--rm", "--user", "0", "img")

    async def rollout() -> None:
        with stock_box_options(256):
            await module.cli(*box)
            await module.cli(*helper)
        await module.cli(*box)

    asyncio.run(rollout())
    limits = box_limits(256)
    extra = (
        "--ulimit",
        f"nofile={limits.nofile}:{limits.nofile}",
        "--pids-limit",
        str(limits.pids),
        "--sysctl",
        f"kernel.shmmni={SHM_SEGMENTS}",
        "--security-opt",
        f"seccomp={profile_path()}",
    )
    assert seen == [(*box[:5], *extra, *box[5:]), helper, box]


def test_a_started_box_is_under_the_eval_s_watches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The id its `docker run` printed puts the box under the file-table watch, and its egress proxy names it
    (the proxy's connection bound stops the rollout in it)."""
    full = "ab" * 32

    async def cli(*argv: str, **kwargs: Any) -> Any:
        return SimpleNamespace(exit_code=0, stdout=f"{full}\n", stderr="")

    async def start(self: Any) -> None:  # verifiers' start, as far as the seam reads it
        self._container, self._proxy, self.info = "vf-x", SimpleNamespace(), SimpleNamespace(id=full[:12])
        await module.cli("docker", "run", "--detach", "--name", "vf-x", "img", "infinity")

    start.__wrapped__ = module.DockerRuntime.start  # type: ignore[attr-defined]  # its source, for the seam's check
    monkeypatch.setattr(module, "cli", cli)
    monkeypatch.setattr(module.DockerRuntime, "start", start)
    stock_box.add_box_options(watch_box)
    box = SimpleNamespace()
    with watching(1000, stop_box_rollout) as watch:
        asyncio.run(module.DockerRuntime.start(box))
        assert list(watch._boxes) == [full]
    assert box._proxy.__dict__[BOX_ATTRIBUTE] == full[:12]
