"""The model server through the official `openai` client: chat completions and Responses."""

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from arena.policies import PolicyResolver
from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, CallTool, RunShell
from arena.server import ServerHandle, start_in_thread
from arena_testkit.recorder import Recorder

LONG_ANSWER = "All done: the file was written and its contents were checked twice over."


SCRIPT = Recorder(ScriptedPolicy([RunShell("echo hi > f"), Answer(LONG_ANSWER)]))
MCP = Recorder(ScriptedPolicy([CallTool("search_logs", {"query": "timeout"}), Answer("searched")]))


def no_environments() -> tuple:
    """Keeps installed environments out of these tests (entry points are tested in test_policies)."""
    return ()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_in_thread(
        resolver=PolicyResolver({"arena/scripted": SCRIPT, "arena/mcp": MCP}, entry_points=no_environments)
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def client(server: ServerHandle) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)


CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "logs_search_logs",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    },
]
TASK = [{"role": "system", "content": "sys"}, {"role": "user", "content": "write f"}]


def test_chat_completion_calls_the_bash_tool_with_usage(client):
    completion = client.chat.completions.create(model="arena/scripted", messages=TASK, tools=CHAT_TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "bash"
    assert json.loads(call.function.arguments) == {"command": "echo hi > f"}
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert SCRIPT.seen[-1].prompt == "write f" and SCRIPT.seen[-1].system == "sys"


def test_chat_ids_are_deterministic_for_the_same_request(client):
    first = client.chat.completions.create(model="arena/scripted", messages=TASK, tools=CHAT_TOOLS)
    second = client.chat.completions.create(model="arena/scripted", messages=TASK, tools=CHAT_TOOLS)
    other = client.chat.completions.create(model="arena/scripted", messages=TASK[1:], tools=CHAT_TOOLS)
    assert first.id == second.id != other.id
    assert first.choices[0].message.tool_calls[0].id == second.choices[0].message.tool_calls[0].id


def test_streamed_chat_tool_call_and_usage_reassemble_in_the_sdk(client):
    with client.chat.completions.stream(
        model="arena/scripted", messages=TASK, tools=CHAT_TOOLS, stream_options={"include_usage": True}
    ) as stream:
        completion = stream.get_final_completion()
    (call,) = completion.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("bash", {"command": "echo hi > f"})
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.completion_tokens > 0


def test_chat_tool_result_round_trip_ends_with_streamed_text(client):
    first = client.chat.completions.create(model="arena/scripted", messages=TASK, tools=CHAT_TOOLS)
    call = first.choices[0].message.tool_calls[0]
    history = TASK + [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": [{"type": "text", "text": "(no output)"}]},
    ]
    chunks = list(
        client.chat.completions.create(model="arena/scripted", messages=history, tools=CHAT_TOOLS, stream=True)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == LONG_ANSWER
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 1
    assert chunks[-1].choices[0].finish_reason == "stop"
    step = SCRIPT.seen[-1].steps[-1]
    assert (step.action, step.result) == (RunShell("echo hi > f"), "(no output)")


def test_chat_logical_tool_name_maps_onto_the_mcp_prefixed_tool(client):
    completion = client.chat.completions.create(model="arena/mcp", messages=TASK, tools=CHAT_TOOLS)
    call = completion.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "logs_search_logs",
        {"query": "timeout"},
    )


def test_routes_also_answer_without_the_v1_prefix(server):
    reply = httpx.post(
        server.url + "/chat/completions",
        json={"model": "arena/echo", "messages": [{"role": "user", "content": "ping"}]},
    )
    assert reply.json()["choices"][0]["message"]["content"] == "ping"
    assert "arena/echo" in {m["id"] for m in httpx.get(server.url + "/models").json()["data"]}


def test_models_lists_every_registered_policy(client):
    names = {m.id for m in client.models.list()}
    assert {"arena/echo", "arena/staller", "arena/scripted", "arena/mcp"} <= names


RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
    {
        "type": "namespace",
        "name": "mcp__logs",
        "description": "Tools in the mcp__logs namespace.",
        "tools": [{"type": "function", "name": "search_logs", "parameters": {"type": "object"}}],
    },
    {"type": "web_search"},
]
CODEX_INPUT = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "<environment_context/>"}],
    },
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write f"}]},
]


def responses_create(client: openai.OpenAI, **kwargs):
    # `tools` carries codex's namespace tool, which the SDK's request types do not model.
    return client.responses.create(
        model=kwargs.pop("model", "arena/scripted"), extra_body={"tools": RESPONSES_TOOLS}, **kwargs
    )


def test_responses_create_calls_exec_command_with_usage(client):
    response = responses_create(client, input=CODEX_INPUT)
    (item,) = response.output
    assert item.type == "function_call" and item.name == "exec_command"
    assert json.loads(item.arguments) == {"cmd": "echo hi > f"}
    assert response.status == "completed"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert SCRIPT.seen[-1].prompt == "<environment_context/>\n\nwrite f"


def test_responses_stream_sends_the_real_event_sequence_for_a_tool_call(client):
    events = list(responses_create(client, input=CODEX_INPUT, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert "response.function_call_arguments.delta" in kinds
    assert kinds[-3:] == [
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert final.output[0].name == "exec_command" and final.usage.total_tokens > 0


def test_responses_round_trip_with_the_sdk_stream_helper(client):
    first = responses_create(client, input=CODEX_INPUT)
    call = first.output[0]
    history = CODEX_INPUT + [
        call.model_dump(exclude_none=True),
        {
            "type": "function_call_output",
            "call_id": call.call_id,
            "output": "Wall time: 0.1 seconds\nOutput:\nok\n",
        },
    ]
    with client.responses.stream(
        model="arena/scripted", input=history, extra_body={"tools": RESPONSES_TOOLS}
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.output_text == LONG_ANSWER == "".join(deltas)
    assert SCRIPT.seen[-1].steps[-1].result == "ok\n"


def test_responses_calls_an_mcp_tool_inside_its_namespace(client):
    response = responses_create(client, model="arena/mcp", input=CODEX_INPUT)
    item = response.output[0].model_dump()
    assert (item["name"], item["namespace"], json.loads(item["arguments"])) == (
        "search_logs",
        "mcp__logs",
        {"query": "timeout"},
    )
    assert [t.name for t in MCP.seen[-1].tools] == ["exec_command", "mcp__logs__search_logs"]
