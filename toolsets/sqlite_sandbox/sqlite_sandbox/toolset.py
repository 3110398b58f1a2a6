"""The `sqlite_sandbox` MCP toolset: SQL with rollback and checkpoints on the database in the agent's box.

Served once per eval as a host subprocess; each rollout's box (its runtime info), paths, budget and
submission arrive through verifiers' state channel (`SandboxState`). Tools reach the database by
running the engine inside that box through verifiers' runtime interface (docker, podman or prime),
so the agent's shell and these tools see the same file. Only `execute` costs budget. A tool error
that charged budget still saves the state before it is raised.
"""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError

from arena_kit.toolset import SerialToolset
from sqlite_sandbox import engine, render
from sqlite_sandbox.boxes import Boxes
from sqlite_sandbox.runner import SandboxUnavailable, run_engine
from sqlite_sandbox.state import CHECKPOINT_NAME, START, SandboxConfig, SandboxState, checkpoint_path

__all__ = ["EngineFailed", "SqliteSandboxToolset"]


class EngineFailed(ToolError):
    """An engine request that did not give an answer; `ran` as in `SandboxUnavailable`."""

    def __init__(self, message: str, ran: bool) -> None:
        super().__init__(message)
        self.ran = ran


# SerialToolset subclasses verifiers' untyped Toolset, so mypy does not see its type parameters.
class SqliteSandboxToolset(SerialToolset[SandboxConfig, SandboxState]):
    TOOL_PREFIX = "sqlite_sandbox"
    RAISED_AFTER_PUSH = (ToolError,)  # a tool error that charged budget still saves the state

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config)
        self._boxes = Boxes()

    async def _engine(self, request: dict[str, Any]) -> dict[str, Any]:
        """The one seam to the box: run an engine request against this rollout's database."""
        s = self.state
        if s.box is None:
            raise ToolError("the sandbox database is not set up for this rollout; the tools cannot run")
        try:
            return await run_engine(
                self._boxes,
                s.box,
                {"db": s.db_path, **request},
                s.checkpoint_dir,
                self.config.exec_timeout_s,
                s.agent_user,
            )
        except SandboxUnavailable as error:
            raise EngineFailed(str(error), ran=error.ran) from None

    def _check_sql(self, sql: str, what: str) -> None:
        size = len(sql.encode())
        if size > self.config.max_sql_bytes:
            raise ToolError(f"{what} is {size} bytes; the limit is {self.config.max_sql_bytes}. Split it up.")
        if "\x00" in sql:
            raise ToolError(f"{what} contains a NUL character; remove it")
        if not engine.split_statements(sql):
            raise ToolError(f"{what} holds no SQL statement")

    def _budget_line(self) -> str:
        s = self.state
        return f"[statements used: {s.statements_used} of {s.statement_budget}]"

    def _named(self, name: str) -> str:
        if not CHECKPOINT_NAME.fullmatch(name):
            raise ToolError(f"checkpoint name {name[:40]!r} is invalid: use 1-32 letters, digits, '_' or '-'")
        return name

    @vf.tool
    async def execute(self, sql: str) -> str:
        """Run SQL (one or more statements separated by ';') against the database at the path the task
        names. The whole call is one transaction: if any statement fails, every statement of the call
        is rolled back and the database is unchanged. Returns each statement's rows (first 50 rows;
        the whole result is capped at a few thousand characters, cut with a marker) or its count of
        changed rows. BEGIN/COMMIT are ignored; ROLLBACK, ATTACH, DETACH and VACUUM are refused.
        Foreign-key enforcement is off, as in the grader. Costs 1 statement from your budget per
        call, however many statements it holds."""
        s = self.state
        if s.statements_used >= s.statement_budget:
            raise ToolError(
                f"statement budget spent ({s.statements_used} of {s.statement_budget}); "
                "no SQL was run. Submit your migration with submit_migration."
            )
        self._check_sql(sql, "the SQL")
        try:
            reply = await self._engine({"op": "execute", "sql": sql, "deadline_s": self.config.exec_timeout_s - 3})
        except EngineFailed as error:
            if not error.ran:
                raise  # the box was never reached: nothing ran, nothing is charged
            s.statements_used += 1
            raise ToolError(f"{error} {self._budget_line()}") from None
        s.statements_used += 1
        budget = self._budget_line()
        # The cap bounds everything the call returns, the budget line included.
        room = self.config.max_output_chars - len(budget) - 1
        if not reply.get("ok"):
            raise ToolError(f"{render.execute_error(reply, room)} {budget}")
        return f"{render.execute_result(reply, room)}\n{budget}"

    @vf.tool
    async def rollback(self) -> str:
        """Restore the database to the last checkpoint (the one most recently taken or restored;
        initially `start`, the database as it was handed to you). Free."""
        name = self.state.last_checkpoint
        await self._restore(name)
        return f"database restored to checkpoint {name!r}."

    @vf.tool
    async def checkpoint(self, name: str) -> str:
        """Save a copy of the database under `name` (1-32 letters, digits, '_' or '-'; taking an
        existing name replaces it; `start` is reserved). It becomes the checkpoint `rollback`
        returns to. At most 10 checkpoints. Free."""
        s = self.state
        name = self._named(name)
        if name == START:
            raise ToolError("the checkpoint name 'start' is reserved for the original database")
        if name not in s.checkpoints and len(s.checkpoints) >= self.config.max_checkpoints:
            raise ToolError(f"already {len(s.checkpoints)} checkpoints ({', '.join(s.checkpoints)}); reuse a name")
        reply = await self._engine({"op": "checkpoint", "path": checkpoint_path(s.checkpoint_dir, name)})
        if not reply.get("ok"):
            raise ToolError(f"checkpoint {name!r} failed: {reply.get('error', 'unknown error')}")
        if name not in s.checkpoints:
            s.checkpoints.append(name)
        s.last_checkpoint = name
        return f"checkpoint {name!r} saved; checkpoints: {', '.join(s.checkpoints)}."

    @vf.tool
    async def restore(self, name: str) -> str:
        """Replace the database with checkpoint `name` (see checkpoint; `start` is the original
        database). It becomes the checkpoint `rollback` returns to. Free."""
        name = self._named(name)
        if name not in self.state.checkpoints:
            raise ToolError(f"no checkpoint named {name!r}; checkpoints: {', '.join(self.state.checkpoints)}")
        await self._restore(name)
        self.state.last_checkpoint = name
        return f"database restored to checkpoint {name!r}."

    async def _restore(self, name: str) -> None:
        path = checkpoint_path(self.state.checkpoint_dir, name)
        reply = await self._engine({"op": "restore", "path": path})
        if not reply.get("ok"):
            raise ToolError(f"restore of checkpoint {name!r} failed: {reply.get('error', 'unknown error')}")

    @vf.tool
    async def schema(self) -> str:
        """Show the database's tables, indexes, views and triggers as CREATE statements, with each
        table's row count. Free."""
        reply = await self._engine({"op": "schema"})
        if not reply.get("ok"):
            raise ToolError(f"could not read the schema: {reply.get('error', 'unknown error')}")
        return render.schema_result(reply)

    @vf.tool
    async def budget(self) -> str:
        """Show statements used and left, the checkpoints, and whether a migration was submitted. Free."""
        s = self.state
        left = max(0, s.statement_budget - s.statements_used)
        submitted = "yes" if s.submission is not None else "no"
        return (
            f"statements used: {s.statements_used} of {s.statement_budget} ({left} left); "
            f"checkpoints: {', '.join(s.checkpoints)} (rollback returns to {s.last_checkpoint!r}); "
            f"migration submitted: {submitted}."
        )

    @vf.tool
    async def submit_migration(self, sql: str) -> str:
        """Submit your final migration SQL. Accepted once; this is the only submission the grader
        reads. It is not run here: after the episode the grader runs it once, as one transaction, on a
        fresh copy of the database holding different, held-out rows, and scores the result. Free."""
        s = self.state
        if s.submission is not None:
            raise ToolError("a migration was already submitted; only the first submission counts")
        self._check_sql(sql, "the migration")
        statements = engine.split_statements(sql)
        if refused := engine.first_refused(statements):
            index, reason = refused
            raise ToolError(
                f"statement {index} of the migration is refused: {reason}. Nothing was submitted; fix it and submit again."
            )
        s.submission = sql
        return (
            f"migration accepted ({len(statements)} statements). It will be graded after the episode "
            "on held-out rows; no further submissions are accepted."
        )


if __name__ == "__main__":
    SqliteSandboxToolset.run()
