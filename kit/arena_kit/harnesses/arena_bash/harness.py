"""The `arena-bash` harness: verifiers' `bash` harness with a stdlib-only in-box runner.

Host side it is `BashHarness` (same config, flags, system prompt, argv, env, resume and tool
gate); only the program differs. Instead of bundling the openai/mcp chat program and running
`uv sync` for it, `launch` writes the runner (`program/`, a stdlib port of that program, same wire,
spliced into one file by `bundle`) beside where verifiers keeps its scripts and runs it with the
image's `python3 -I`; in a lean box with a non-root agent, root writes it and the agent runs it. The argv after the program is built exactly as `launch_chat_program` builds
it; `tests/kit/harnesses/arena_bash` pins that.
"""

from __future__ import annotations

import hashlib
import json
import os

from arena_kit.harnesses.arena_bash.bundle import program_source
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
from verifiers.v1.clients import ModelContext
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harnesses.bash.harness import (
    BASH_SYSTEM_PROMPT,
    EDIT_SYSTEM_PROMPT,
    SEARCH_PROMPT,
    BashHarness,
)
from verifiers.v1.runtimes import ProgramResult, Runtime
from verifiers.v1.task import TaskData
from verifiers.v1.trace import Trace
from verifiers.v1.types import Messages

__all__ = ["HARNESS_ID", "LeanBashHarness", "RUNNER_SOURCE", "runner_path"]

HARNESS_ID = "arena-bash"
RUNNER_SOURCE = program_source()
"""The in-box program, bundled once per process (it is written into every rollout's box)."""
INTERPRETER = ("python3", "-I")
"""The image's own Python, isolated: no user site, no PYTHON* variables, no cwd on sys.path."""


def runner_path(runtime: Runtime) -> str:
    """Where the runner goes, named by content hash: verifiers' script directory (per user, as verifiers
    writes its own runner there, as that user, on the stock path). In a lean box with an agent user,
    root writes it, into root's own directory beside it (`<scripts dir>-arena`): in the agent's
    `<scripts dir>-<user>`, root's `mkdir` would leave that directory root-owned, closed to what the
    agent's harness writes there."""
    if runtime.user is None:
        directory = runtime.scripts_dir
    elif isinstance(runtime, LeanDockerRuntime):
        directory = f"{runtime.scripts_dir}-arena"
    else:
        directory = f"{runtime.scripts_dir}-{runtime.user}"
    return f"{directory}/arena-lean-{hashlib.sha256(RUNNER_SOURCE).hexdigest()[:16]}.py"


class LeanBashHarness(BashHarness):  # type: ignore[misc]  # verifiers ships no types
    """`bash` with the same loop, tools and wire, and a program that imports only the stdlib."""

    async def setup(self, runtime: Runtime) -> None:
        """Nothing to install: the runner needs only the image's python3 (written at launch)."""

    async def launch(
        self,
        ctx: ModelContext,
        trace: Trace,
        runtime: Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: TaskData,
        tool_interception_url: str | None = None,
    ) -> ProgramResult:
        system_prompt, prompt = self.resolve_prompt(data)
        env, options = self._options(tool_interception_url)
        args = [f"--base-url={endpoint}", f"--api-key={secret}", f"--model={ctx.model}", *options]
        system_prompt = self._system_prompt(system_prompt)
        if system_prompt:
            args.append(f"--system-prompt={system_prompt}")
        if mcp_urls:
            servers = {name: {"url": url, "timeout": self.config.tool_timeout} for name, url in mcp_urls.items()}
            args.append("--mcp-config=" + json.dumps({"mcpServers": servers}))
        args += await self._prompt_args(trace, runtime, prompt)
        path = runner_path(runtime)
        argv = [*INTERPRETER, path, *args]
        if isinstance(runtime, LeanDockerRuntime):
            home = {"HOME": runtime.home} if runtime.user is not None and runtime.home else {}
            # A pooled box may hold this very runner already loaded (as this user): then no exec.
            prestarted = await runtime.run_prestarted(RUNNER_SOURCE, path, args, {**env, **home})
            if prestarted is not None:
                return prestarted
            if runtime.user is None:
                return await runtime.run_program_with_file(path, RUNNER_SOURCE, argv, env)
            # The runner is the harness's file, not the agent's: root writes it (its directory too) and
            # hands the exec to the agent in the same exec, so the agent can read but never rewrite it.
            drop = ["setpriv", f"--reuid={runtime.user}", f"--regid={runtime.user}", "--init-groups", "--"]
            return await runtime.with_user(None).run_program_with_file(
                path, RUNNER_SOURCE, [*drop, *argv], {**env, **home}
            )
        await runtime.write(path, RUNNER_SOURCE)
        return await runtime.run_program(argv, env)

    def _system_prompt(self, task_prompt: str | None) -> str:
        fragments = [BASH_SYSTEM_PROMPT]
        if self.config.edit:
            fragments.append(EDIT_SYSTEM_PROMPT)
        if self.config.search:
            fragments.append(SEARCH_PROMPT)
        return "\n\n".join(p for p in (" ".join(fragments), task_prompt) if p)

    def _options(self, tool_interception_url: str | None) -> tuple[dict[str, str], list[str]]:
        """The program's env and its flags, as `BashHarness.launch` sets them."""
        env = {**self.config.resolved_env}
        args = ["--bash"]
        if tool_interception_url:
            args.append(f"--tool-interception-url={tool_interception_url}")
        if self.config.compaction is not None:
            args.append("--compaction")
            if self.config.compaction.summarize_at_tokens is not None:
                args.append(f"--summarize-at-tokens={self.config.compaction.summarize_at_tokens}")
        if self.config.edit:
            args.append("--edit")
        if self.config.search:
            # As verifiers: the key travels on argv and leaves the env, so `bash` children lack it.
            serper_key = env.pop("SERPER_API_KEY", None)
            if serper_key is None:
                serper_key = os.environ.get("SERPER_API_KEY")
            if not serper_key:
                raise ValueError(
                    "arena-bash search=true requires SERPER_API_KEY in the eval environment "
                    "(the host env or the harness config's env)"
                )
            args += ["--search", f"--serper-key={serper_key}"]
        return env, args

    @staticmethod
    async def _prompt_args(trace: Trace, runtime: Runtime, prompt: str | Messages | None) -> list[str]:
        if isinstance(prompt, str):
            return [f"--prompt={prompt}"]
        if prompt is None:
            return []
        path = f".vf-initial-messages-{trace.id}.json"
        await runtime.write(path, json.dumps([message_to_wire(message) for message in prompt]).encode())
        return [f"--initial-messages-file={path}"]
