"""Each dialect's request → Observation, and how a policy action becomes that dialect's reply."""

import json

import pytest

from arena.dialects import AnthropicDialect, ChatDialect, ResponsesDialect
from arena.dialects.base import RequestError, plan
from arena_kit.policy import Answer, CallTool, RunShell, Step

CHAT, RESPONSES, ANTHROPIC = ChatDialect(), ResponsesDialect(), AnthropicDialect()


def chat_tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def parse(dialect, body: dict):
    return dialect.parse(body, "seed", 1)


def test_chat_prompt_joins_user_messages_before_the_first_assistant_turn():
    parsed = parse(
        CHAT,
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "developer", "content": [{"type": "text", "text": "and exact"}]},
                {"role": "user", "content": "context"},
                {"role": "user", "content": [{"type": "text", "text": "the task"}]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "a follow-up"},
            ],
        },
    )
    obs = parsed.observation
    assert (obs.system, obs.prompt, obs.last_user) == (
        "be brief\n\nand exact",
        "context\n\nthe task",
        "a follow-up",
    )
    assert obs.dialect == "chat" and obs.steps == () and obs.tools == ()


def test_chat_history_pairs_each_tool_call_with_its_result():
    calls = [
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
        {
            "id": "b",
            "type": "function",
            "function": {"name": "logs_search_logs", "arguments": '{"query": "x"}'},
        },
        {"id": "c", "type": "function", "function": {"name": "logs_search_logs", "arguments": "not json"}},
    ]
    parsed = parse(
        CHAT,
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": calls},
                {"role": "tool", "tool_call_id": "a", "content": "f1\nf2"},
                {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "3 hits"}]},
            ],
            "tools": [
                chat_tool("bash"),
                chat_tool("logs_search_logs"),
                {"type": "custom", "custom": {"name": "x"}},
            ],
        },
    )
    assert parsed.observation.steps == (
        Step(RunShell("ls"), "f1\nf2"),
        Step(CallTool("logs_search_logs", {"query": "x"}), "3 hits"),
        Step(CallTool("logs_search_logs", {"_raw": "not json"}), None),
    )
    assert [t.name for t in parsed.observation.tools] == ["bash", "logs_search_logs"]


def test_responses_reads_codex_shaped_input():
    body = {
        "model": "m",
        "instructions": "base instructions",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "dev notes"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context/>"}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "the task"}]},
            {"type": "reasoning", "summary": []},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "exec_command",
                "arguments": '{"cmd": "cat f"}',
            },
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Chunk ID: 1a\nWall time: 0.1 seconds\nProcess exited with code 0\n"
                "Original token count: 2\nOutput:\nhello\n",
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "search_logs",
                "namespace": "mcp__logs",
                "arguments": '{"query": "q"}',
            },
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "Wall time: 0.01 seconds\nOutput:\nhit"}],
            },
            {
                "type": "local_shell_call",
                "call_id": "c3",
                "action": {"type": "exec", "command": ["bash", "-lc", "pwd"]},
            },
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
            {
                "type": "namespace",
                "name": "mcp__logs",
                "tools": [{"type": "function", "name": "search_logs", "parameters": {}}],
            },
            {
                "type": "namespace",
                "name": "multi_agent_v1",
                "tools": [{"type": "function", "name": "spawn_agent"}],
            },
            {"type": "web_search"},
        ],
    }
    obs = parse(RESPONSES, body).observation
    assert obs.system == "base instructions\n\ndev notes"
    assert obs.prompt == "<environment_context/>\n\nthe task"
    assert [t.name for t in obs.tools] == [
        "exec_command",
        "mcp__logs__search_logs",
        "multi_agent_v1__spawn_agent",
    ]
    assert obs.steps == (
        Step(RunShell("cat f"), "hello\n"),
        Step(CallTool("mcp__logs__search_logs", {"query": "q"}), "hit"),
        Step(RunShell("pwd"), None),
    )


def test_responses_accepts_a_plain_string_input():
    obs = parse(RESPONSES, {"model": "m", "input": "just this"}).observation
    assert (obs.prompt, obs.last_user) == ("just this", "just this")


CLAUDE_DEFERRED = (
    "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded:\n"
    "WebFetch\nmcp__logs__search_logs\n\nAvailable agent types: ..."
)


def claude_body(messages: list, tools: list | None = None) -> dict:
    return {
        "model": "m",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": messages,
        "tools": tools
        if tools is not None
        else [
            {"name": "Bash", "input_schema": {"type": "object"}},
            {"name": "ToolSearch", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
    }


def test_anthropic_reads_claude_code_shaped_messages():
    body = claude_body(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nbe careful\n</system-reminder>\n"},
                    {"type": "text", "text": "the task"},
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": "# Environment\n" + CLAUDE_DEFERRED}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "ls", "description": "d"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "a.txt"}, {"type": "text", "text": "b.txt"}],
                    },
                    {"type": "text", "text": "<system-reminder>todo list is empty</system-reminder>"},
                ],
            },
        ]
    )
    obs = parse(ANTHROPIC, body).observation
    assert obs.prompt == "<system-reminder>\nbe careful\n</system-reminder>\n\nthe task"
    assert obs.last_user == "the task"
    assert obs.system.startswith("You are Claude Code.\n\n# Environment")
    assert obs.steps == (Step(RunShell("ls"), "a.txt\nb.txt"),)
    assert [t.name for t in obs.tools] == ["Bash", "ToolSearch", "WebFetch", "mcp__logs__search_logs"]


def test_a_deferred_claude_tool_is_loaded_first_and_the_load_is_hidden_from_the_policy():
    first = [
        {"role": "user", "content": "search the logs"},
        {"role": "system", "content": CLAUDE_DEFERRED},
    ]
    parsed = parse(ANTHROPIC, claude_body(first))
    reply = plan(CallTool("search_logs", {"query": "q"}), parsed, ANTHROPIC.shell)
    assert reply.call is not None
    assert (reply.call.name, reply.call.arguments) == (
        "ToolSearch",
        {"query": "select:mcp__logs__search_logs"},
    )

    loaded = first + [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": reply.call.arguments}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "tool_reference", "tool_name": "mcp__logs__search_logs"}],
                }
            ],
        },
    ]
    tools = claude_body([])["tools"] + [
        {"name": "mcp__logs__search_logs", "input_schema": {"type": "object"}, "defer_loading": True}
    ]
    parsed = parse(ANTHROPIC, claude_body(loaded, tools))
    assert parsed.observation.steps == ()
    reply = plan(CallTool("search_logs", {"query": "q"}), parsed, ANTHROPIC.shell)
    assert reply.call is not None
    assert (reply.call.name, reply.call.arguments) == ("mcp__logs__search_logs", {"query": "q"})


@pytest.mark.parametrize(
    ("dialect", "tools", "expected"),
    [
        pytest.param(CHAT, [chat_tool("bash")], ("bash", {"command": "ls -l"}), id="chat-bash"),
        pytest.param(
            ANTHROPIC,
            [{"name": "Bash", "input_schema": {}}],
            ("Bash", {"command": "ls -l", "description": "run a command"}),
            id="claude-Bash",
        ),
        pytest.param(
            RESPONSES,
            [{"type": "function", "name": "exec_command"}],
            ("exec_command", {"cmd": "ls -l"}),
            id="codex-exec_command",
        ),
        pytest.param(
            RESPONSES,
            [
                {
                    "type": "function",
                    "name": "shell_command",
                    "parameters": {"properties": {"command": {"type": "string"}}},
                }
            ],
            ("shell_command", {"command": "ls -l"}),
            id="codex-shell_command",
        ),
        pytest.param(
            RESPONSES,
            [
                {
                    "type": "function",
                    "name": "shell",
                    "parameters": {"properties": {"command": {"type": "array"}}},
                }
            ],
            ("shell", {"command": ["bash", "-lc", "ls -l"]}),
            id="codex-shell",
        ),
    ],
)
def test_run_shell_becomes_the_harness_shell_tool(dialect, tools, expected):
    body = {"model": "m", "tools": tools}
    body.update({"input": "go"} if dialect is RESPONSES else {"messages": [{"role": "user", "content": "go"}]})
    reply = plan(RunShell("ls -l"), parse(dialect, body), dialect.shell)
    assert reply.call is not None
    assert (reply.call.target.wire_name, reply.call.arguments) == expected


def test_a_namespaced_tool_is_called_back_with_its_namespace():
    body = {
        "model": "m",
        "input": "go",
        "tools": [{"type": "namespace", "name": "mcp__logs", "tools": [{"type": "function", "name": "search_logs"}]}],
    }
    reply = plan(CallTool("search_logs", {"query": "q"}), parse(RESPONSES, body), RESPONSES.shell)
    assert reply.call is not None
    item = RESPONSES.render(reply, parse(RESPONSES, body))["output"][0]
    assert (item["name"], item["namespace"], json.loads(item["arguments"])) == (
        "search_logs",
        "mcp__logs",
        {"query": "q"},
    )


def test_tool_actions_the_request_cannot_carry_become_text():
    no_tools = parse(CHAT, {"model": "m", "messages": [{"role": "user", "content": "title this"}]})
    other_tools = parse(
        CHAT, {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [chat_tool("edit")]}
    )
    assert "echo hi" in plan(RunShell("echo hi"), no_tools, CHAT.shell).text
    assert plan(RunShell("echo hi"), no_tools, CHAT.shell).call is None
    unoffered = plan(CallTool("search_logs"), other_tools, CHAT.shell)
    assert unoffered.call is None and "search_logs" in unoffered.text
    assert plan(Answer("fine"), other_tools, CHAT.shell).text == "fine"


@pytest.mark.parametrize(
    ("dialect", "body", "param"),
    [
        pytest.param(CHAT, {"messages": []}, "model", id="chat-missing-model"),
        pytest.param(CHAT, {"model": "m"}, "messages", id="chat-missing-messages"),
        pytest.param(CHAT, {"model": "m", "messages": "hi"}, "messages", id="chat-messages-not-a-list"),
        pytest.param(CHAT, {"model": "m", "messages": [], "stream": "yes"}, "stream", id="chat-stream-not-bool"),
        pytest.param(
            CHAT,
            {"model": "m", "messages": [{"role": "wizard", "content": "x"}]},
            "messages[0].role",
            id="chat-bad-role",
        ),
        pytest.param(RESPONSES, {"model": "m"}, "input", id="responses-missing-input"),
        pytest.param(RESPONSES, {"model": 3, "input": "x"}, "model", id="responses-model-not-a-string"),
        pytest.param(RESPONSES, {"model": "m", "input": [1]}, "input[0]", id="responses-item-not-an-object"),
        pytest.param(
            ANTHROPIC,
            {"model": "m", "messages": [{"role": "user", "content": 5}]},
            "messages[0].content",
            id="anthropic-bad-content",
        ),
        pytest.param(
            ANTHROPIC,
            {"model": "m", "messages": [], "tools": [{"description": "no name"}]},
            "tools.0.name",
            id="anthropic-tool-without-name",
        ),
    ],
)
def test_malformed_requests_are_rejected_with_the_offending_parameter(dialect, body, param):
    with pytest.raises(RequestError) as caught:
        parse(dialect, body)
    assert (caught.value.status, caught.value.param) == (400, param)


def test_structured_mcp_results_reach_policies_as_the_tool_text():
    from arena.dialects.base import unwrap_mcp_result

    assert unwrap_mcp_result('{"result":"{\\"counts\\":{\\"a\\":1}}"}') == '{"counts":{"a":1}}'
    assert unwrap_mcp_result('{"result": 3}') == '{"result": 3}'  # not a string: left as is
    assert unwrap_mcp_result('{"result":"x","other":1}') == '{"result":"x","other":1}'
    assert unwrap_mcp_result("plain text") == "plain text"
