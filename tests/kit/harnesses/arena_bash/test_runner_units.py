"""The lean runner's pure parts against the code they copy: verifiers' truncation and MCP content
conversion, and the openai SDK's stream accumulation plus verifiers' reasoning overrides."""

from __future__ import annotations

import ast
import http.client
import io
import json
import sys
import types
from typing import Any

import pytest
from mcp.types import ImageContent, TextContent
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from verifiers.v1.harnesses.utils import compaction, core, mcp

from arena_kit.harnesses.arena_bash.harness import RUNNER_SOURCE

runner = types.ModuleType("arena_bash_runner")
"""The bundled program exactly as it is written into the box, loaded as a module (its `__main__` guard stays shut)."""
exec(compile(RUNNER_SOURCE, "arena-bash-runner.py", "exec"), runner.__dict__)

TEXTS = [
    "",
    "short\n",
    "x" * 20_000,
    "x" * 20_001,
    "é" * 15_001 + "\ntail",  # the cut falls inside a two-byte character
    "€" * 7_000 + "a" * 3 + "\n" * 50,
    "line\n" * 9_000,
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_tool_output_is_truncated_exactly_as_verifiers_truncates_it(text: str) -> None:
    assert runner.truncate_tool_output(text) == compaction.truncate_tool_output(text)
    message = {"role": "tool", "tool_call_id": "c", "content": text, "name": "bash"}
    assert runner.bound_tool_message(message) == compaction.bound_tool_message(message)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": choices,
        "usage": usage,
    }


STREAMS = {
    "tool-call": [
        _chunk({"role": "assistant"}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command": '}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"ls"}'}}]}, "tool_calls"),
    ],
    "text-with-reasoning": [
        _chunk({"role": "assistant", "content": "", "reasoning_content": "think "}),
        _chunk({"role": "assistant", "reasoning_content": "more", "content": "Hel"}),
        _chunk({"content": "lo"}, "stop"),
    ],
    "text-and-two-calls": [
        _chunk({"role": "assistant", "content": "Running."}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ]
            }
        ),
        _chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "b", "type": "function", "function": {"name": "edit", "arguments": "{}"}}
                ]
            },
            "tool_calls",
        ),
    ],
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_a_streamed_reply_is_assembled_and_dumped_as_the_sdk_and_verifiers_do(name: str) -> None:
    chunks = [*STREAMS[name], _chunk(None, usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})]  # type: ignore[arg-type]
    state = ChatCompletionStreamState()
    overrides: dict[str, Any] = {}
    for chunk in chunks:
        parsed = ChatCompletionChunk.model_validate(chunk)
        state.handle_chunk(parsed)
        for choice in parsed.choices:
            delta = choice.delta.model_dump(exclude_none=True)
            if any(delta.get(f) for f in core._STREAMED_MESSAGE_FIELDS):
                core._accumulate_streamed_message(overrides, delta)
    snapshot = state.current_completion_snapshot.choices[0].message
    overrides.setdefault("role", "assistant")
    for key, value in overrides.items():
        setattr(snapshot, key, value)
    want = snapshot.model_dump(exclude_none=True)

    sse = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    completion = runner.read_stream(io.BufferedReader(io.BytesIO(sse)))  # type: ignore[arg-type]
    got = runner.dump_message(completion["choices"][0]["message"])
    assert json.dumps(got) == json.dumps(want)  # equal, key order included
    assert runner.context_tokens(completion) == 7


def test_a_stream_cut_before_its_finish_is_a_transport_error() -> None:
    sse = f"data: {json.dumps(_chunk({'role': 'assistant', 'content': 'Hi'}))}\n\n".encode()
    with pytest.raises(runner.TransportError):
        runner.read_stream(io.BufferedReader(io.BytesIO(sse)))  # type: ignore[arg-type]


def test_mcp_content_becomes_chat_content_as_verifiers_converts_it() -> None:
    cases = [
        [TextContent(type="text", text="a"), TextContent(type="text", text="b")],
        [TextContent(type="text", text="see"), ImageContent(type="image", data="AAA", mime_type="image/png")],
        [],
    ]
    for blocks in cases:
        wire = [block.model_dump(by_alias=True, exclude_none=True) for block in blocks]
        assert runner.mcp_content(wire) == mcp.mcp_content_to_chat_content(blocks)


def test_the_runner_imports_only_the_standard_library() -> None:
    tree = ast.parse(RUNNER_SOURCE)
    modules = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    modules |= {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert modules - {"__future__"} <= set(sys.stdlib_module_names), modules - set(sys.stdlib_module_names)


def test_a_models_list_cut_mid_body_leaves_compaction_without_a_threshold_as_the_sdk_error_does() -> None:
    class CutBody:
        def read(self) -> bytes:
            raise http.client.IncompleteRead(b'{"data": [', 100)

    class Client:
        def request(self, *_args: Any) -> CutBody:
            return CutBody()

    client = Client()
    models = runner.ModelClient.models.__get__(client)
    with pytest.raises(runner.TransportError):
        models()
    client.models = models  # type: ignore[attr-defined]
    assert runner.discover_threshold(client, "m") is None  # type: ignore[arg-type]
