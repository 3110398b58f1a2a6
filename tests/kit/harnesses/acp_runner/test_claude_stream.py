"""Arena's ACP runner drives Claude Code itself for verifiers' claude_code harness (`claude_stream`): `claude`
gets the argv, env, `initialize` and answers claude-agent-acp gives it, and the host the packets it gets through
the adapter. The argv and `initialize` below are what the adapter gave the real binary (captured in the harness
image, rollout-specific values in their place); `test_node_harness_fidelity_docker.py` holds whole rollouts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena_kit.harnesses.acp_runner import RUNNER_SOURCE
from arena_kit.harnesses.acp_runner.claude_stream import speaks_for

HERE = Path(__file__).parent
ADAPTER = "/var/tmp/vf-claude-agent-acp-2.1.278-0.79.0/packages/node_modules/.bin/claude-agent-acp"
MCP = '{"mcpServers":{"tools":{"type":"http","url":"http://127.0.0.1:9/mcp","headers":{}},"more":{"type":"http","url":"http://127.0.0.1:9/more","headers":{}}}}'
ARGV = [
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
    "--permission-prompt-tool",
    "stdio",
    "--disallowedTools",
    "WebSearch,AskUserQuestion",
    "--tools",
    "default",
    "--mcp-config",
    MCP,
    "--setting-sources=user,project,local",
    "--strict-mcp-config",
    "--permission-mode",
    "default",
    "--allow-dangerously-skip-permissions",
    "--include-partial-messages",
    "--session-id=<session>",
    "--name",
    "trace-1",
    "--replay-user-messages",
    "",
]
INITIALIZE = {
    "subtype": "initialize",
    "hooks": {
        name: [{"hookCallbackIds": [f"hook_{i}"]}]
        for i, name in enumerate(["PostToolUse", "PostModelSwitch", "PostCompact", "TaskCreated", "TaskCompleted"])
    },
    "appendSystemPrompt": "be brief",
    "forwardSubagentText": False,
}


def _drive(variant: str, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the packets the host got back, its gate log last; what `claude` logged: its start, then each line it read)."""
    log = tmp_path / "claude.log"
    done = subprocess.run(
        [sys.executable, str(HERE / "drive_runner.py"), variant, sys.executable, "-I", "-c", RUNNER_SOURCE.decode()],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"CLAUDE_LOG": str(log), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()], [
        json.loads(line) for line in log.read_text().splitlines() if line != "EOF"
    ]


def _answers(read: list[dict[str, Any]]) -> list[Any]:
    return [
        line["response"].get("response", line["response"].get("error"))
        for line in read
        if line.get("type") == "control_response"
    ]


def test_claude_starts_as_the_adapter_starts_it_and_gets_its_answers(tmp_path):
    packets, claude = _drive("claude", tmp_path)
    start, read = claude[0], claude[1:]
    session = next(a.removeprefix("--session-id=") for a in start["argv"] if a.startswith("--session-id="))
    assert [a.replace(session, "<session>") for a in start["argv"]] == ARGV
    assert start["cwd"] == str(tmp_path)
    assert start["env"] == {
        "NoDefaultCurrentDirectoryInExePath": "1",
        "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS": "1",
        "CLAUDE_CODE_ENTRYPOINT": "sdk-ts",
        "CLAUDE_AGENT_SDK_VERSION": "0.3.274",
        "NODE_OPTIONS": None,
        "DEBUG": None,
    }
    assert read[0]["type"] == "control_request" and read[0]["request"] == INITIALIZE
    users = [line for line in read if line.get("type") == "user"]
    assert [u["message"]["content"] for u in users] == [
        [
            {"type": "text", "text": "do the task"},
            {"type": "text", "text": "\n\n"},
            {"type": "text", "text": "part two"},
        ],
        [{"type": "text", "text": "again"}],
    ]
    assert all(
        u["session_id"] == session and u["parent_tool_use_id"] is None and u["origin"] == {"kind": "human"}
        for u in users
    )
    allow = {
        "behavior": "allow",
        "updatedInput": {"command": "ls c-allow"},
        "toolUseID": "c-allow",
        "decisionClassification": "user_temporary",
    }
    deny = {
        "behavior": "deny",
        "message": "User refused permission to run tool",
        "decisionClassification": "user_reject",
    }
    assert _answers(read) == 2 * [
        allow,
        {"continue": True},
        {**deny, "toolUseID": "c-deny"},
        {"continue": True},
        {**deny, "toolUseID": "c-stop"},
        {"continue": True},
    ]
    # The host: both turns' reply is the last API message's text blocks (not a subagent's, not an earlier message's).
    replies = [p["result"] for p in packets if isinstance(p.get("result"), dict) and "reply" in p["result"]]
    assert replies == 2 * [
        {"reply": "final reply", "stop_reason": "end_turn", "response_metadata": {}, "update_metadata": []}
    ]
    assert [p["result"] for p in packets if p.get("id") in (1, 3)] == 2 * [
        {"outcome": "promptRequired", "reason": "noRunningTurn"}
    ]
    assert [(g["tool_call_id"], g["authorization"]) for g in packets[-1]["gate"]] == 2 * [
        ("c-allow", "Bearer s3cret"),
        ("c-deny", "Bearer s3cret"),
        ("c-stop", "Bearer s3cret"),
    ]
    assert packets[-1]["exit"] == 0 and (tmp_path / "claude.log").read_text().endswith(
        "EOF\n"
    )  # claude saw its stdin end


def test_a_gate_stop_aborts_the_ask_and_interrupts_claude_as_the_adapter_does(tmp_path):
    packets, claude = _drive("claude-stop", tmp_path)
    read = claude[1:]
    replies = [p["result"] for p in packets if isinstance(p.get("result"), dict) and "reply" in p["result"]]
    assert [(r["reply"], r["stop_reason"]) for r in replies] == 2 * [("looking", "cancelled")]
    assert _answers(read)[2:5] == [
        {
            "behavior": "deny",
            "message": "User refused permission to run tool",
            "toolUseID": "c-deny",
            "decisionClassification": "user_reject",
        },
        {"continue": True},
        "Tool use aborted",
    ]
    interrupts = [
        line for line in read if line.get("type") == "control_request" and line["request"] == {"subtype": "interrupt"}
    ]
    assert len(interrupts) == 2  # one per stopped turn; the second turn ran after the first's interrupt
    assert packets[-1]["exit"] == 0


CONFIG: dict[str, Any] = {
    "command": ["/var/tmp/vf-node/bin/node", ADAPTER],
    "client_capabilities": {},
    "session_meta": {
        "claudeCode": {"options": {"strictMcpConfig": True, "disallowedTools": [], "extraArgs": {"name": "t"}}},
        "systemPrompt": {"append": "x"},
    },
}


@pytest.mark.parametrize(
    "change",
    [
        {"command": ["/var/tmp/vf-node/bin/node", ADAPTER.replace("0.79.0", "0.80.0")]},
        {"command": ["/var/tmp/vf-node/bin/node", ADAPTER.replace("2.1.278", "2.1.279")]},
        {"command": ["/usr/bin/codex-acp"]},
        {"client_capabilities": {"elicitation": {"form": True}}},
        {"session_meta": {"claudeCode": {"options": {"tools": []}}}},
        {"session_meta": {"claudeCode": {"options": {"extraArgs": {"model": "m"}}}}},
        {"session_meta": {"systemPrompt": "replace it all"}},
        {"session_meta": {"disableBuiltInTools": True}},
    ],
)
def test_a_config_the_port_was_not_read_against_runs_the_adapter(change):
    env = {"CLAUDE_CODE_EXECUTABLE": "/x/claude", "HOME": "/nonexistent"}
    assert speaks_for(CONFIG, env, "/nonexistent")
    assert not speaks_for({**CONFIG, **change}, env, "/nonexistent")


@pytest.mark.parametrize(
    "variable", ["MAX_THINKING_TOKENS", "CLAUDE_MODEL_CONFIG", "DEBUG_CLAUDE_AGENT_SDK", "CLAUDE_CODE_ENTRYPOINT"]
)
def test_an_env_the_adapter_turns_into_argv_runs_the_adapter(variable):
    env = {"CLAUDE_CODE_EXECUTABLE": "/x/claude", "HOME": "/nonexistent"}
    assert not speaks_for(CONFIG, {**env, variable: "1"}, "/nonexistent")
    assert not speaks_for(CONFIG, {"HOME": "/nonexistent"}, "/nonexistent")  # no binary named


@pytest.mark.parametrize("where", ["config/settings.json", ".claude/settings.json", ".claude/settings.local.json"])
def test_settings_with_a_default_permission_mode_run_the_adapter(tmp_path, where):
    env = {"CLAUDE_CODE_EXECUTABLE": "/x/claude", "CLAUDE_CONFIG_DIR": "config", "HOME": "/nonexistent"}
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(json.dumps({"permissions": {"ask": ["*"]}}))
    assert speaks_for(CONFIG, env, str(tmp_path))  # verifiers' gate rule alone: the port reproduces it
    (tmp_path / where).write_text(json.dumps({"permissions": {"ask": ["*"], "defaultMode": "acceptEdits"}}))
    assert not speaks_for(CONFIG, env, str(tmp_path))
    (tmp_path / where).write_text("{not json")
    assert not speaks_for(CONFIG, env, str(tmp_path))
