"""The policy interface: what a scripted "model" sees (conversation, tools) and what it may do next.

A policy is plain, deterministic Python. It sees exactly what a model would see — the prompt, the
offered tools and the history of its own actions with their results — and never reads answer keys.
The model server (`arena.server`) turns each dialect's request into an `Observation` and renders the
returned `Action` back into that dialect, so one policy drives bash, claude_code and codex alike.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "Action",
    "Answer",
    "CallTool",
    "Observation",
    "Policy",
    "RunShell",
    "Step",
    "ToolSpec",
    "tool_matches",
]


def tool_matches(offered: str, name: str) -> bool:
    """Whether the offered tool name is the logical tool `name`: equal, or `name` behind an MCP
    prefix ending in `_` or `__` (`search_logs`, `log_search_search_logs`,
    `mcp__log_search__search_logs`)."""
    return offered == name or offered.endswith(("_" + name, "__" + name))


@dataclass(frozen=True)
class ToolSpec:
    """One tool as offered to the model: its name in this harness, description, JSON schema."""

    name: str
    description: str = ""
    parameters: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CallTool:
    """Call a tool by its logical name (e.g. `search_logs`); the server maps it onto the offered
    tool whose name is exactly that or ends in `_<name>` / `__<name>` (MCP prefixes differ per
    harness: `log_search_search_logs`, `mcp__log_search__search_logs`)."""

    name: str
    arguments: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RunShell:
    """Run a shell command with the harness's own shell tool (`bash`, `Bash`, `exec_command`)."""

    command: str


@dataclass(frozen=True)
class Answer:
    """Reply with text and no tool call: this ends the agent's turn (and the rollout)."""

    text: str


Action = CallTool | RunShell | Answer


@dataclass(frozen=True)
class Step:
    """One past action of this policy and the text of its result (None while none came back)."""

    action: CallTool | RunShell
    result: str | None

    def tool_is(self, name: str) -> bool:
        """Whether this step called the logical tool `name` (see `tool_matches`)."""
        return isinstance(self.action, CallTool) and tool_matches(self.action.name, name)


@dataclass(frozen=True)
class Observation:
    """Everything a model sees at one turn, normalised across the three dialects."""

    model: str
    """The requested model name, e.g. `arena/fault-localisation/oracle`."""
    system: str
    prompt: str
    """The text of every user message before the first assistant turn: the task prompt, plus any
    harness preamble (codex's `<environment_context>`, Claude Code's `<system-reminder>` blocks)."""
    tools: tuple[ToolSpec, ...]
    steps: tuple[Step, ...]
    """This policy's own tool calls so far, oldest first, with their results."""
    dialect: str
    """`chat`, `responses` or `anthropic`: for logging only; policies must not branch on it."""
    last_user: str = ""
    """The text of the latest user message, without tool results or Claude Code's
    `<system-reminder>` blocks (what `arena/echo` replies with)."""

    def has_tool(self, name: str) -> bool:
        return any(tool_matches(t.name, name) for t in self.tools)

    def rng(self) -> random.Random:
        """A generator seeded by the prompt and the turn number: same conversation, same draws."""
        digest = hashlib.sha256(f"{self.model}\0{self.prompt}\0{len(self.steps)}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))


@runtime_checkable
class Policy(Protocol):
    """Decides the next action from an observation. Must be deterministic given the observation."""

    def __call__(self, obs: Observation) -> Action: ...
