"""The model server through the official `anthropic` client: Messages, streaming, token counts."""

from collections.abc import Iterator

import anthropic
import pytest

from arena.policies import PolicyResolver
from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, RunShell
from arena.server import ServerHandle, start_in_thread
from arena_testkit.recorder import Recorder

LONG_ANSWER = "The command ran; the file now holds the greeting, as the task asked for."


SCRIPT = Recorder(ScriptedPolicy([RunShell("echo hi > f"), Answer(LONG_ANSWER)]))
TOOLS = [
    {
        "name": "Bash",
        "description": "run bash",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {"name": "Read", "input_schema": {"type": "object"}},
]
TASK = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "<system-reminder>x</system-reminder>"},
            {"type": "text", "text": "write f"},
        ],
    }
]


def no_environments() -> tuple:
    """Keeps installed environments out of these tests (entry points are tested in test_policies)."""
    return ()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_in_thread(resolver=PolicyResolver({"arena/scripted": SCRIPT}, entry_points=no_environments)) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(server: ServerHandle) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)


def create(client: anthropic.Anthropic, messages: list, **kwargs):
    return client.messages.create(
        model="arena/scripted", max_tokens=1024, system="be brief", messages=messages, **kwargs
    )


def test_messages_create_calls_bash_with_usage(client):
    message = create(client, TASK, tools=TOOLS)
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "Bash"
    assert block.input == {"command": "echo hi > f", "description": "run a command"}
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert (SCRIPT.seen[-1].system, SCRIPT.seen[-1].last_user) == ("be brief", "write f")


def test_streamed_tool_use_reassembles_in_the_sdk(client):
    with client.messages.stream(model="arena/scripted", max_tokens=1024, messages=TASK, tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    (block,) = message.content
    assert (block.name, block.input["command"]) == ("Bash", "echo hi > f")
    assert message.stop_reason == "tool_use" and message.usage.output_tokens > 1


def test_tool_result_round_trip_ends_the_turn_with_streamed_text(client):
    first = create(client, TASK, tools=TOOLS)
    call = first.content[0]
    history = TASK + [
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": [{"type": "text", "text": "written"}],
                },
                {"type": "text", "text": "<system-reminder>todo</system-reminder>"},
            ],
        },
    ]
    with client.messages.stream(model="arena/scripted", max_tokens=1024, messages=history, tools=TOOLS) as stream:
        pieces = list(stream.text_stream)
        message = stream.get_final_message()
    assert "".join(pieces) == LONG_ANSWER and len(pieces) > 1
    assert message.stop_reason == "end_turn"
    step = SCRIPT.seen[-1].steps[-1]
    assert (step.action, step.result) == (RunShell("echo hi > f"), "written")


def test_a_side_request_without_tools_gets_a_short_text_reply(client):
    message = client.messages.create(
        model="arena/scripted",
        max_tokens=1,
        messages=[{"role": "user", "content": "Write a title for this chat"}],
    )
    (block,) = message.content
    assert block.type == "text" and block.text
    assert message.stop_reason == "end_turn"


def test_count_tokens_estimates_the_request(client):
    count = client.messages.count_tokens(model="arena/scripted", messages=TASK, tools=TOOLS)
    assert count.input_tokens > 10


def test_models_list_parses_in_the_anthropic_client(client):
    assert "arena/scripted" in {model.id for model in client.models.list()}
