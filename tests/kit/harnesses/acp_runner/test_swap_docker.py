"""In a default lean box (read-only root, the agent user), verifiers' ACP runner is prepared as Arena's
stdlib program: one exec, no `uv`, a file root owns that the agent runs but cannot rewrite
(`LeanDockerRuntime.prepare_uv_script`)."""

from __future__ import annotations

import asyncio

import pytest
import verifiers.v1 as vf
from verifiers.v1.acp import ACP_SOURCE

from arena_kit.harnesses.acp_runner import RUNNER_SOURCE
from arena_kit.isolation import ISOLATION
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

pytestmark = pytest.mark.docker


def test_a_lean_box_runs_the_stdlib_runner_in_place_of_verifiers_and_the_agent_cannot_rewrite_it(images):
    config = vf.DockerConfig(image=images["harness"], allow=[], memory=1.0, cpu=1.0)

    async def scenario() -> tuple[list[str], list[str], bytes, vf.ProgramResult, vf.ProgramResult]:
        box = LeanDockerRuntime(config, writable=ISOLATION.writable("/app", "agent"), workdir_owner="agent").with_user("agent")
        await box.start()
        try:
            argv = await box.prepare_uv_script(ACP_SOURCE, {"UV_FROZEN": "false"})  # as ACPHarness.setup
            again = await box.prepare_uv_script(ACP_SOURCE, {}, activate=False)  # as the session's start
            written = await box.read(argv[-1])
            rewrite = await box.run(["sh", "-c", f"echo x >> {argv[-1]}"], {})
            owner = await box.run(["stat", "-c", "%U %a", argv[-1]], {})
        finally:
            await box.stop()
        return argv, again, written, rewrite, owner

    argv, again, written, rewrite, owner = asyncio.run(scenario())
    assert argv == again and argv[:2] == ["python3", "-I"] and "/arena-acp-" in argv[-1]
    assert written == RUNNER_SOURCE
    assert rewrite.exit_code != 0 and "denied" in rewrite.stderr.lower()
    assert owner.stdout.split() == ["root", "644"]
