"""In a default lean box (read-only root, the agent user), verifiers' ACP runner is prepared as Arena's
stdlib program: no exec, no `uv`, no file an agent could rewrite, its source in the argv
(`LeanDockerRuntime.prepare_uv_script`); and a claude_code harness's install checks run once per image."""

from __future__ import annotations

import asyncio

import pytest
import verifiers.v1 as vf
from verifiers.v1.acp import ACP_SOURCE

from arena_kit.harnesses.acp_runner import RUNNER_SOURCE
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
from arena_testkit.exec_count import counting_execs

pytestmark = pytest.mark.docker


def _box(image: str) -> vf.Runtime:
    config = vf.DockerConfig(image=image, allow=[], memory=1.0, cpu=1.0)
    return LeanDockerRuntime(config, writable=ISOLATION.writable("/app", "agent"), workdir_owner="agent").with_user(
        "agent"
    )


def test_a_lean_box_runs_the_stdlib_runner_in_place_of_verifiers_from_its_argv(images):
    async def scenario() -> tuple[list[str], list[str], int, vf.ProgramResult]:
        box = _box(images["harness"])
        await box.start()
        try:
            with counting_execs() as execs:
                argv = await box.prepare_uv_script(ACP_SOURCE, {"UV_FROZEN": "false"})  # as ACPHarness.setup
                again = await box.prepare_uv_script(ACP_SOURCE, {}, activate=False)  # as the session's start
            prepared = len(execs)
            ran = await box.run(["sh", "-c", 'true | "$@"', "sh", *argv], {})  # an empty pipe: no packet, it ends
        finally:
            await box.stop()
        return argv, again, prepared, ran

    argv, again, prepared, ran = asyncio.run(scenario())
    assert argv == again == ["python3", "-I", "-c", RUNNER_SOURCE.decode()]
    assert prepared == 0
    assert ran.exit_code == 0, ran.stderr


def test_claude_code_checks_its_baked_install_once_per_image_and_leaves_the_cleanup_to_the_box_s_removal(images):
    from verifiers.v1.harnesses.claude_code import ClaudeCodeHarness, ClaudeCodeHarnessConfig

    harness = ClaudeCodeHarness(ClaudeCodeHarnessConfig())

    class Trace:
        id = "0" * 32

    async def one_rollout(removed_after: bool) -> list[list[str]]:
        box = _box(images["harness"])
        box.removed_after_rollout = removed_after
        await box.start()
        try:
            with counting_execs() as execs:
                await harness.setup(box)
                await harness.cleanup(Trace(), box)
        finally:
            await box.stop()
        return execs

    async def scenario() -> list[list[list[str]]]:
        return [await one_rollout(False), await one_rollout(False), await one_rollout(True)]

    first, second, removed = asyncio.run(scenario())
    # The first box of the image (in this process) may check Node and the harness; no later one does.
    assert len(first) <= 3 and first[-1] == ["rm", "-rf", ".vf-claude/" + "0" * 32]
    assert second == [["rm", "-rf", ".vf-claude/" + "0" * 32]]
    assert removed == []
