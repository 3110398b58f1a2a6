"""The three wire dialects the model server speaks, behind one small interface."""

from __future__ import annotations

from typing import Protocol

from arena.dialects.anthropic import AnthropicDialect
from arena.dialects.base import Call, Parsed, Reply, RequestError
from arena.dialects.chat import ChatDialect
from arena.dialects.responses import ResponsesDialect

__all__ = ["DIALECTS", "AnthropicDialect", "ChatDialect", "Dialect", "ResponsesDialect"]


class Dialect(Protocol):
    """Parse one request body; render a reply (whole or as SSE events) or an error body."""

    name: str

    def parse(self, body: dict, seed: str, input_tokens: int) -> Parsed:
        """Raises `RequestError` (400) on a body the dialect cannot read."""
        ...

    def shell(self, command: str, parsed: Parsed) -> Call | None: ...

    def render(self, reply: Reply, parsed: Parsed) -> dict: ...

    def stream(self, reply: Reply, parsed: Parsed) -> list[bytes]: ...

    def error_body(self, error: RequestError) -> dict: ...


DIALECTS: dict[str, Dialect] = {d.name: d for d in (ChatDialect(), ResponsesDialect(), AnthropicDialect())}
