"""The stock path's create-time limits (`arena_kit.verifiers_seam.stock_box`): the options a rollout's context
sets reach verifiers' `docker run` of its box, and nothing else (the proxy helper's `run --rm`, another
rollout's box, a box started outside any context)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from verifiers.v1.runtimes import docker as module

from arena_kit.isolation import box_limits, stock_box_options
from arena_kit.runtimes.seccomp import profile_path
from arena_kit.verifiers_seam import stock_box


def test_only_the_box_run_of_a_rollout_that_set_them_gets_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []

    async def cli(*argv: str, **kwargs: Any) -> None:
        seen.append(argv)

    monkeypatch.setattr(module, "cli", cli)
    stock_box.add_box_options()
    box = ("docker", "run", "--label", "x", "--detach", "--cpus", "1", "--name", "vf-1", "img", "infinity")
    helper = ("docker", "run", "--label", "x", "--rm", "--user", "0", "img")

    async def rollout() -> None:
        with stock_box_options(256):
            await module.cli(*box)
            await module.cli(*helper)
        await module.cli(*box)

    asyncio.run(rollout())
    limits = box_limits(256)
    extra = ("--ulimit", f"nofile={limits.nofile}:{limits.nofile}", "--pids-limit", str(limits.pids),
             "--security-opt", f"seccomp={profile_path()}")
    assert seen == [(*box[:5], *extra, *box[5:]), helper, box]
