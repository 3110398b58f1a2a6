"""Plays a scripted policy on one task in-process: the real sqlite_sandbox tool logic, minus the box.

`LocalSandbox` is the real toolset with its one seam to the box (`_engine`) replaced by a direct call
of the same engine on a host temp file, so budgets, checkpoints, submission and the result text
are exactly what the agent would get. Tool results reach the policy wrapped in harness-like text.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from arena_kit.policy import Answer, CallTool, Observation, Policy, RunShell, Step, ToolSpec, tool_matches
from mcp.server.mcpserver.exceptions import ToolError
from schema_migration import dbfile, prompt
from schema_migration.generate import spec, visible_rows
from schema_migration.heldout import rows as heldout_rows
from schema_migration.grade import Grade, grade
from schema_migration.taskset import SYSTEM_PROMPT, efficiency
from sqlite_sandbox import engine
from sqlite_sandbox.state import START, SandboxConfig, SandboxState, checkpoint_path
from sqlite_sandbox.toolset import SqliteSandboxToolset
from verifiers.v1.mcp.server import _call_state

TOOLS = ("execute", "rollback", "checkpoint", "restore", "schema", "budget", "submit_migration")
TOOL_SPECS = tuple(ToolSpec(f"sqlite_sandbox_{name}") for name in TOOLS)


class LocalSandbox(SqliteSandboxToolset):
    async def _engine(self, request: dict) -> dict:
        return engine.handle({"db": self.state.db_path, **request})


@dataclass
class Episode:
    steps: list[Step]
    state: SandboxState
    grade: Grade | None
    reward: float


async def _call(toolset: LocalSandbox, state: SandboxState, action: CallTool) -> str:
    name = next((t for t in TOOLS if tool_matches(action.name, t)), None)
    if name is None:
        return f"Error: unknown tool {action.name}"
    token = _call_state.set(state)
    try:
        text = await getattr(toolset, name)(**action.arguments)
        return f"<tool_result name={action.name!r}>\n{text}\n</tool_result>"
    except ToolError as error:
        return f"<tool_result name={action.name!r} is_error>\nError: {error}\n</tool_result>"
    finally:
        _call_state.reset(token)


def play(
    policy: Policy, seed: int, budget: int = 30, free: int = 8, heldout: int = 300, max_turns: int = 120
) -> Episode:
    """Run `policy` on task `seed` until it answers, then grade its submission on held-out rows."""
    s = spec(seed)
    text = prompt.render(s, "/app/db.sqlite", budget, free)
    with tempfile.TemporaryDirectory(prefix="migration-sim-") as tmp:
        db = Path(tmp) / "db.sqlite"
        db.write_bytes(dbfile.to_bytes(s.source, visible_rows(s)))
        checkpoints = Path(tmp) / "checkpoints"
        checkpoints.mkdir()
        shutil.copy(db, checkpoint_path(str(checkpoints), START))
        state = SandboxState(db_path=str(db), checkpoint_dir=str(checkpoints), statement_budget=budget)
        toolset = LocalSandbox(SandboxConfig())
        steps: list[Step] = []

        async def run() -> None:
            for _ in range(max_turns):
                obs = Observation(
                    model="arena/schema-migration/sim", system=SYSTEM_PROMPT, prompt=text,
                    tools=TOOL_SPECS, steps=tuple(steps), dialect="chat",
                )  # fmt: skip
                action = policy(obs)
                if isinstance(action, Answer):
                    return
                if isinstance(action, RunShell):
                    steps.append(Step(action, "Error: no shell in this simulation"))
                    continue
                steps.append(Step(action, await _call(toolset, state, action)))

        asyncio.run(run())
    if state.submission is None:
        return Episode(steps, state, None, 0.0)
    result = grade(state.submission, s, heldout_rows(s, heldout))
    return Episode(steps, state, result, result.score * efficiency(state.statements_used, free, budget))
