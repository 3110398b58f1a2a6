#!/usr/bin/env python3
"""A scripted `claude` for the runner's stream-json side (`claude_stream`): logs its argv, the env it was given
and every line it reads, and per user message plays one turn: a text message, three tool calls (the gate allows,
denies, stops: a permission ask each, a PostToolUse hook after each), a reply in two text blocks, a result."""

import json
import os
import sys

log = open(os.environ["CLAUDE_LOG"], "a")  # noqa: SIM115 - held for the process's life
ADDED = (
    "NoDefaultCurrentDirectoryInExePath",
    "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_AGENT_SDK_VERSION",
    "NODE_OPTIONS",
    "DEBUG",
)
log.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": {k: os.environ.get(k) for k in ADDED}}) + "\n")
count = 0


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict | None:
    line = sys.stdin.readline()
    log.write(line or "EOF\n")
    log.flush()
    return json.loads(line) if line else None


def control(request: dict) -> tuple[dict, bool]:
    """One control request to the client; (its answer, whether the client interrupted the turn meanwhile)."""
    global count
    count += 1
    request_id = f"r-{count}"
    send({"type": "control_request", "request_id": request_id, "request": request})
    interrupted = False
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        if message.get("type") == "control_request" and message["request"]["subtype"] == "interrupt":
            send(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                }
            )
            interrupted = True
        elif message.get("type") == "control_response" and message["response"]["request_id"] == request_id:
            return message["response"], interrupted


def assistant(message_id: str, *content: dict) -> None:
    send(
        {
            "type": "assistant",
            "message": {"id": message_id, "role": "assistant", "content": list(content)},
            "parent_tool_use_id": None,
        }
    )


def turn(user: dict) -> None:
    uuid = user["uuid"]
    send({**user, "isReplay": True})
    assistant("msg_a", {"type": "text", "text": "looking"})
    send(
        {
            "type": "assistant",
            "message": {"id": "msg_sub", "content": [{"type": "text", "text": "a subagent's"}]},
            "parent_tool_use_id": "t-0",
        }
    )
    for call in ("c-allow", "c-deny", "c-stop"):
        assistant(
            f"msg_{call}",
            {"type": "tool_use", "id": call, "name": "mcp__tools__run", "input": {"command": f"ls {call}"}},
        )
        answer, interrupted = control(
            {
                "subtype": "can_use_tool",
                "tool_name": "mcp__tools__run",
                "input": {"command": f"ls {call}"},
                "tool_use_id": call,
            }
        )
        if answer["subtype"] == "error" and not interrupted:
            while (message := read()) is not None and message.get("type") != "control_request":
                pass
            if message is None:
                sys.exit(0)
            send(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                }
            )
            interrupted = True
        if interrupted:
            send(
                {
                    "type": "result",
                    "subtype": "error_during_execution",
                    "is_error": False,
                    "errors": [],
                    "user_message_uuid": uuid,
                }
            )
            return
        control(
            {
                "subtype": "hook_callback",
                "callback_id": "hook_0",
                "input": {"hook_event_name": "PostToolUse"},
                "tool_use_id": call,
            }
        )
    assistant("msg_z", {"type": "text", "text": "final "})
    assistant("msg_z", {"type": "text", "text": "reply"})
    send(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "final reply",
            "stop_reason": "end_turn",
            "usage": {"output_tokens": 4},
            "user_message_uuid": uuid,
        }
    )


while (message := read()) is not None:
    if message.get("type") == "control_request":
        send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": message["request_id"], "response": {"commands": []}},
            }
        )
    elif message.get("type") == "user":
        turn(message)
