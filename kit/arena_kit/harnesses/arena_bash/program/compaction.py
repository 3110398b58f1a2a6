"""Bounding and compaction as verifiers' program does them: tool output truncated, the context checkpointed when full."""

from __future__ import annotations

from typing import Any

from arena_kit.harnesses.arena_bash.program.model import ModelClient, StatusError
from arena_kit.harnesses.arena_bash.program.wire import TransportError

TOOL_OUTPUT_MAX_BYTES = 20_000
RESERVE_TOKENS = 16_384
COMPACTION_ATTEMPTS = 3
CHECKPOINT_COMPACTION_PROMPT = """You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Current progress and key decisions made
- Important context, constraints, or user preferences
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work.

Reply with the summary as plain text. Do not call any tools - summarize from the conversation as it stands."""
POST_COMPACTION_FRAMING = """Another language model started to solve this problem and produced \
a summary of its thinking process. You also have access to the state of the tools that \
were used by that language model. Use this to build on the work \
that has already been done and avoid duplicating work. Here is \
the summary produced by the other language model, use the \
information in this summary to assist with your own analysis:"""
CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "exceeds the context window",
    "reduce the length of the messages",
    "maximum context length",
    "prompt is too long",
    "request_too_large",
    "request entity too large",
    "exceeds the maximum number of tokens",
    "maximum prompt length is",
)
CONTEXT_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


class CompactionFailed(Exception):
    """Every checkpoint attempt failed."""


def estimated_tokens(chars: str) -> int:
    return (len(chars) + 3) // 4


def truncate_tool_output(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= TOOL_OUTPUT_MAX_BYTES:
        return text
    keep = TOOL_OUTPUT_MAX_BYTES // 2
    head = data[:keep].decode("utf-8", errors="ignore")
    tail = data[-keep:].decode("utf-8", errors="ignore")
    return (
        f"Warning: truncated output (original token count: {estimated_tokens(text)})\n"
        f"Total output lines: {text.count(chr(10)) + 1}\n\n"
        f"{head}\n[... {len(data) - 2 * keep} bytes truncated ...]\n{tail}"
    )


def bound_tool_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": truncate_tool_output(content)}
    return message


def is_context_overflow(error: StatusError) -> bool:
    details = f"{error} {error.body or ''}"
    return error.status_code in (400, 413) and any(m in details.casefold() for m in CONTEXT_OVERFLOW_MARKERS)


def discover_threshold(client: ModelClient, model: str) -> int | None:
    try:
        cards = client.models()
    except (StatusError, TransportError, ValueError):
        return None
    for card in cards:
        if not isinstance(card, dict) or card.get("id") != model:
            continue
        for field in CONTEXT_WINDOW_FIELDS:
            value = card.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return max(value - RESERVE_TOKENS, value // 2)
        break
    return None


def compactable(messages: list[Any]) -> bool:
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    return any(m.get("role") != "system" and i != first_user for i, m in enumerate(messages))


def context_tokens(completion: dict[str, Any]) -> int:
    usage = completion.get("usage")
    if not usage:
        return 0
    return (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)


class Compactor:
    """verifiers' Compactor: compact once and retry once when a turn exhausts the context."""

    def __init__(self, client: ModelClient, model: str, tools: list[Any], enabled: bool, threshold: int | None):
        self.client, self.model, self.tools = client, model, tools
        self.enabled, self.threshold = enabled, threshold
        self.compacted = False
        self.last_good = 0

    def reached(self, completion: dict[str, Any], extra_tokens: int = 0) -> bool:
        return (
            self.enabled and self.threshold is not None and context_tokens(completion) + extra_tokens >= self.threshold
        )

    def complete(self, messages: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        try:
            completion = self.client.chat(self.model, messages, self.tools)
        except StatusError as error:
            if not self.enabled or self.threshold is None or not is_context_overflow(error):
                raise
            if not compactable(messages):
                if self.compacted:
                    raise CompactionFailed("the compacted conversation still overflows") from error
                raise
        else:
            if not self.reached(completion):
                self.last_good = len(messages)
                return completion, messages
            if completion["choices"][0]["finish_reason"] != "length" or not compactable(messages):
                return completion, messages
        messages = self.compact(messages)
        try:
            completion = self.client.chat(self.model, messages, self.tools)
        except StatusError as error:
            if is_context_overflow(error):
                raise CompactionFailed("the rebuilt conversation still overflows") from error
            raise
        return completion, messages

    def compact(self, messages: list[Any]) -> list[Any]:
        system = [m for m in messages if m.get("role") == "system"]
        base = messages
        for _ in range(COMPACTION_ATTEMPTS):
            checkpoint = [*base, {"role": "user", "content": CHECKPOINT_COMPACTION_PROMPT}]
            try:
                completion = self.client.chat(self.model, checkpoint, self.tools, tool_choice="none")
            except StatusError as error:
                if not is_context_overflow(error):
                    raise
                base = messages[: self.last_good]
                continue
            message = completion["choices"][0]["message"]
            text = (message.get("content") or "").strip()
            if not message.get("tool_calls") and text:
                rebuilt = [*system, {"role": "user", "content": POST_COMPACTION_FRAMING + "\n\n" + text}]
                self.last_good = len(rebuilt)
                self.compacted = True
                return rebuilt
        raise CompactionFailed(f"no usable summary after {COMPACTION_ATTEMPTS} attempts")
