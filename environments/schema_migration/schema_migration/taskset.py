# mypy: disallow-subclassing-any=False, disallow-untyped-decorators=False
"""The schema-migration taskset on Arena's contract: a seeded SQLite database in the agent's container, graded on held-out rows.

Task data carries only the seed, the budget knobs and the fingerprint of the host's task secret: the
spec and the visible rows (written into the container at setup) come from the seed, the held-out
rows (rebuilt on the host at grading) from the secret's key for the seed (`heldout.key`), so
nothing held out is ever stored in task data, the container or a tool result, and a recovered seed
regenerates none of it. The agent's one
submission arrives in `trace.state.submission` from the `sqlite_sandbox` toolset. The box, its
confinement and the rewrite rules come from `ArenaTask`; the task adds the runtime it can serve
(`admit`), the visible database (`prepare`) and what no tool result may carry (`held_out`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator, Sequence

import verifiers.v1 as vf

from arena_kit import task_secret
from arena_kit.contract.task import ArenaData, ArenaTask, ArenaTaskConfig
from arena_kit.contract.taskset import ArenaTaskset, ArenaTasksetConfig, Split
from arena_kit.box.isolation import ISOLATION
from sqlite_sandbox.boxes import box_info
from sqlite_sandbox.state import (
    DEFAULT_CHECKPOINT_DIR,
    DEFAULT_DB_PATH,
    START,
    SandboxConfig,
    SandboxState,
    checkpoint_path,
)
from sqlite_sandbox.toolset import SqliteSandboxToolset

from schema_migration import ENVIRONMENT, dbfile, heldout, prompt
from schema_migration.generate import HELDOUT_ROWS, expected_rows, heldout_rows, seeds, spec, visible_rows
from schema_migration.grade import grade

__all__ = [
    "SYSTEM_PROMPT",
    "SchemaMigrationConfig",
    "SchemaMigrationData",
    "SchemaMigrationTask",
    "SchemaMigrationTaskConfig",
    "SchemaMigrationTaskset",
    "efficiency",
    "heldout_secrets",
]

STATEMENT_BUDGET: int = SandboxState.model_fields["statement_budget"].default
"""The sandbox's own default budget, so the prompt and the toolset never disagree."""
FREE_STATEMENTS = 8
SECRET_SAMPLE = 64
"""Held-out-only values the result rewrite watches for (a leak of any would be a leak of all)."""
CHECKPOINT_DIR = f"{ISOLATION.agent_home}/.sqlite_sandbox"
"""The agent's checkpoints: in its home (writable in a read-only box; Prime mounts /tmp as a small tmpfs)."""


def heldout_secrets(seed: int, n: int) -> tuple[str, ...]:
    """Distinctive text values of the held-out rows that the agent cannot see or derive: not found,
    in any letter case, inside any value of the visible sample or of its correctly migrated form
    (a held-out city that is a trimmed visible city is no leak), inside any example value the prompt
    shows before or after the rules, or anywhere in the prompt's text (an agent that rehearses on the
    prompt's examples reads them back)."""
    return _heldout_secrets(seed, n, heldout.key(seed))


@functools.lru_cache(maxsize=256)
def _heldout_secrets(seed: int, n: int, key: int) -> tuple[str, ...]:
    s = spec(seed)
    visible = visible_rows(s)
    values = [
        str(v)
        for table in (visible, expected_rows(s, visible))
        for rows in table.values()
        for row in rows
        for v in row
        if v is not None
    ]
    # The budget knobs change only numbers in the prompt, never a secret-length word.
    text = prompt.render(s, DEFAULT_DB_PATH, STATEMENT_BUDGET, FREE_STATEMENTS)
    seen = "\0".join([*values, *prompt.shown_values(s), text]).casefold()
    found: list[str] = []
    for rows in heldout_rows(s, n, key=key).values():
        for row in rows:
            for value in row:
                text = str(value) if isinstance(value, str) else ""
                if (
                    len(text) >= 8
                    and any(c.isalpha() for c in text)
                    and text.casefold() not in seen
                    and text not in found
                ):
                    found.append(text)
                    if len(found) == SECRET_SAMPLE:
                        return tuple(found)
    return tuple(found)


SYSTEM_PROMPT = (
    "You are a careful database engineer. Inspect the database, rehearse your migration with the "
    "sqlite_sandbox tools (roll back after rehearsing), and submit the final migration exactly once "
    "with submit_migration. Your migration will run on different data than you can see."
)


def efficiency(used: int, free: int, budget: int) -> float:
    """1.0 up to `free` execute calls, falling linearly to 0.5 at the full budget."""
    if used <= free or budget <= free:
        return 1.0
    return max(0.5, 1.0 - 0.5 * (used - free) / (budget - free))


class SchemaMigrationData(ArenaData):
    seed: int
    """The public seed the spec and visible rows are rebuilt from; the held-out rows come from the
    host's secret key for it (`heldout.key`)."""
    heldout_rows: int = HELDOUT_ROWS
    """Rows in the main table of the held-out database."""
    statement_budget: int = STATEMENT_BUDGET
    """execute calls the sandbox allows."""
    free_statements: int = FREE_STATEMENTS
    """execute calls that cost no score; each one beyond lowers it (see `efficiency`)."""
    task_secret: str = ""
    """The fingerprint of the host secret the task was built under (`arena_kit.task_secret.fingerprint`):
    results from hosts with other secrets are other tasks."""


class SchemaMigrationTaskConfig(ArenaTaskConfig):
    statement_budget: int = STATEMENT_BUDGET
    """execute calls the sandbox allows per rollout."""
    free_statements: int = FREE_STATEMENTS
    """execute calls an efficient rehearsal needs; beyond them the reward falls to x0.5 at the budget."""
    heldout_rows: int = HELDOUT_ROWS
    """Rows in the main table of the held-out database the grader builds."""


class SchemaMigrationTask(ArenaTask[SchemaMigrationData, SandboxState, SchemaMigrationTaskConfig]):
    ENVIRONMENT = ENVIRONMENT

    def admit(self, runtime: vf.Runtime) -> None:
        box_info(runtime)  # refuses, in words, a runtime the host-side tools cannot reach

    async def prepare(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        task_secret.require(self.data.task_secret, self.data.id)  # before the agent spends a turn on it
        box = box_info(runtime)
        user = self.data.agent_user
        s = spec(self.data.seed)
        db = dbfile.to_bytes(s.source, visible_rows(s))
        # The database and its checkpoints are the agent's: written as it, in its workdir and home.
        agent = runtime if user is None else runtime.with_user(user, home=ISOLATION.agent_home)
        checkpoints = DEFAULT_CHECKPOINT_DIR if user is None else CHECKPOINT_DIR
        await agent.write(DEFAULT_DB_PATH, db)
        await agent.write(checkpoint_path(checkpoints, START), db)
        state = trace.state
        state.box = box
        state.db_path = DEFAULT_DB_PATH
        state.checkpoint_dir = checkpoints
        state.agent_user = user
        state.statement_budget = self.data.statement_budget

    @vf.reward(weight=1.0)
    async def migration(self, trace: vf.Trace) -> float:
        state = trace.state
        used = state.statements_used
        trace.info["submission"] = state.submission
        if state.submission is None:
            trace.info["grade"] = {"score": 0.0, "reason": "no migration was submitted", "statements_used": used}
            return 0.0
        task_secret.require(self.data.task_secret, self.data.id)  # another secret: other held-out rows, another task
        s = spec(self.data.seed)
        sql, n = state.submission, self.data.heldout_rows
        key = heldout.key(self.data.seed)
        trace.info["task_secret"] = self.data.task_secret
        result = await asyncio.to_thread(lambda: grade(sql, s, heldout_rows(s, n, key=key), key=key))
        factor = efficiency(used, self.data.free_statements, self.data.statement_budget)
        trace.info["grade"] = {
            "score": result.score,
            "reason": result.reason,
            "stage": result.stage,
            "statements_used": used,
            "efficiency": factor,
        }
        return result.score * factor

    @vf.metric
    async def statements_used(self, trace: vf.Trace) -> float:
        return float(trace.state.statements_used)

    async def held_out(self, trace: vf.Trace) -> Sequence[str]:
        """The held-out-only values (`heldout_secrets`): the held-out DB never enters the box, so a
        result carrying one would be a leak."""
        task_secret.require(self.data.task_secret, self.data.id)
        return await asyncio.to_thread(heldout_secrets, self.data.seed, self.data.heldout_rows)


class SchemaMigrationConfig(ArenaTasksetConfig):
    task: SchemaMigrationTaskConfig = SchemaMigrationTaskConfig()
    tools: SandboxConfig = SandboxConfig()
    split: Split = "train"
    """Seed range to draw tasks from (`generate.SPLITS`: train 0.., dev 1,000,000.., test 2,000,000..)."""

    def seeds(self) -> range:
        """The first `num_tasks` seeds of the split, which cycle through the ten families: the
        contract's split starts, with dev and test 100,000 seeds each (`generate.seeds`)."""
        return seeds(self.split, self.num_tasks)


class SchemaMigrationTaskset(ArenaTaskset, vf.Taskset[SchemaMigrationTask, SchemaMigrationConfig]):
    def load(self) -> Iterator[SchemaMigrationTask]:
        knobs = self.config.task
        for seed in self.config.seeds():
            s = spec(seed)
            yield SchemaMigrationTask(
                SchemaMigrationData(
                    id=f"{self.config.split}-{seed}",
                    name=f"schema-migration#{seed}",
                    prompt=prompt.render(s, DEFAULT_DB_PATH, knobs.statement_budget, knobs.free_statements),
                    system_prompt=SYSTEM_PROMPT,
                    seed=seed,
                    heldout_rows=knobs.heldout_rows,
                    statement_budget=knobs.statement_budget,
                    free_statements=knobs.free_statements,
                    task_secret=task_secret.fingerprint(),
                ),
                knobs,
            )

    @classmethod
    def toolsets(cls, config: SchemaMigrationConfig) -> list[vf.Toolset]:
        return [SqliteSandboxToolset(config.tools)]
