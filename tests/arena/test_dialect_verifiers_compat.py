"""Our replies, streamed and whole, parse in verifiers' own dialects (what the interception server reads)."""

import json

import pytest
from verifiers.v1.dialects.anthropic import AnthropicDialect as VfAnthropic
from verifiers.v1.dialects.chat import ChatDialect as VfChat
from verifiers.v1.dialects.responses import ResponsesDialect as VfResponses

from arena.dialects import AnthropicDialect, ChatDialect, ResponsesDialect
from arena.dialects.base import plan
from arena_kit.policy import Answer, RunShell

CASES = [
    pytest.param(
        ChatDialect(),
        VfChat(),
        {
            "model": "arena/x",
            "messages": [{"role": "user", "content": "go"}],
            "stream_options": {"include_usage": True},
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        },
        "bash",
        id="chat",
    ),
    pytest.param(
        ResponsesDialect(),
        VfResponses(),
        {
            "model": "arena/x",
            "input": "go",
            "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
        },
        "exec_command",
        id="responses",
    ),
    pytest.param(
        AnthropicDialect(),
        VfAnthropic(),
        {
            "model": "arena/x",
            "max_tokens": 9,
            "messages": [{"role": "user", "content": "go"}],
            "tools": [{"name": "Bash", "input_schema": {}}],
        },
        "Bash",
        id="anthropic",
    ),
]


def replay(vf_dialect, events: list[bytes]):
    parser = vf_dialect.stream_parser()
    for event in events:
        if parser.on_done is not None and event.startswith(b"data: [DONE]"):
            parser.on_done()
        parser.feed(event)
    assert any(vf_dialect.is_terminal_event(event) for event in events)
    return parser.finish()


@pytest.mark.parametrize(("ours", "theirs", "body", "shell"), CASES)
def test_a_streamed_tool_call_parses_in_verifiers(ours, theirs, body, shell):
    parsed = ours.parse(body, "seed", 40)
    response = replay(theirs, ours.stream(plan(RunShell("ls -l"), parsed, ours.shell), parsed))
    (call,) = response.message.tool_calls
    assert (
        call.name == shell and json.loads(call.arguments)[("cmd" if shell == "exec_command" else "command")] == "ls -l"
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.completion_tokens > 0


@pytest.mark.parametrize(("ours", "theirs", "body", "shell"), CASES)
def test_a_whole_text_answer_parses_in_verifiers(ours, theirs, body, shell):
    parsed = ours.parse(body, "seed", 40)
    raw = ours.render(plan(Answer("all done"), parsed, ours.shell), parsed)
    response = theirs.parse_response(theirs.validate_response(raw))
    assert response.message.content == "all done" and not response.message.tool_calls
    assert response.finish_reason == "stop"
    assert response.usage.prompt_tokens == 40


@pytest.mark.parametrize(("ours", "theirs", "body", "shell"), CASES)
def test_a_streamed_text_answer_parses_in_verifiers(ours, theirs, body, shell):
    parsed = ours.parse(body, "seed", 40)
    text = "a longer answer that needs more than one streamed delta to arrive in full"
    response = replay(theirs, ours.stream(plan(Answer(text), parsed, ours.shell), parsed))
    assert response.message.content == text and response.finish_reason == "stop"
