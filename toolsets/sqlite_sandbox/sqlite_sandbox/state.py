"""The sandbox toolset's config and the per-rollout state it shares with the task through `trace.state`.

`Task.setup` fills `box` (the runtime info the tool server re-attaches with) and the paths; the
tools count statements and keep checkpoint names; `submit_migration` stores the one submission in
`submission`, which is THE channel the grader reads the agent's migration from.
"""

from __future__ import annotations

import re

import verifiers.v1 as vf
from pydantic import Field

from sqlite_sandbox.boxes import BoxInfo

DEFAULT_DB_PATH = "/app/db.sqlite"
DEFAULT_CHECKPOINT_DIR = "/var/tmp/sqlite_sandbox"
"""On the box's disk: Prime VMs mount /tmp as a small tmpfs."""
START = "start"
"""The checkpoint `Task.setup` takes before the agent starts."""
CHECKPOINT_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")


def checkpoint_path(checkpoint_dir: str, name: str) -> str:
    """Where checkpoint `name` lives inside the box (`name` must match CHECKPOINT_NAME)."""
    return f"{checkpoint_dir.rstrip('/')}/{name}.sqlite"


class SandboxConfig(vf.SharedToolsetConfig):
    exec_timeout_s: float = 20.0
    """Seconds one tool call may run inside the box before it is cancelled."""
    max_output_chars: int = 6000
    """Characters of rows one execute result may show; longer output is cut with a marker."""
    max_sql_bytes: int = 100_000
    """Largest SQL text (UTF-8 bytes) execute and submit_migration accept."""
    max_checkpoints: int = 10
    """Named checkpoints one rollout may keep, `start` included."""


class SandboxState(vf.State):
    box: BoxInfo | None = None
    """The agent's box as its runtime recorded it (type, id, runtime config); None until `Task.setup` runs."""
    db_path: str = DEFAULT_DB_PATH
    """The database file inside the box, shared with the agent's shell."""
    checkpoint_dir: str = DEFAULT_CHECKPOINT_DIR
    """Directory inside the box holding checkpoint copies of the database (and spooled large requests)."""
    agent_user: str | None = None
    """The box user the engine runs as: the agent's own (None: the runtime's default), so a tool call
    can read and write nothing the agent's shell could not."""
    statement_budget: int = 30
    """execute calls allowed; each call costs 1 whatever it contains."""
    statements_used: int = 0
    checkpoints: list[str] = Field(default_factory=lambda: [START])
    last_checkpoint: str = START
    """The checkpoint `rollback` returns to: the one most recently taken or restored."""
    submission: str | None = None
    """The submitted migration SQL (accepted once). The grader reads it from here."""
