"""A scripted ACP agent for the runner comparison: logs every line its client sends, and exercises what a
client answers: initialize, session/new, message chunks with metadata, three permission asks (the gate
allows, denies, stops), a file read it never advertised, steering and session/close."""

import json
import os
import sys

log = open(os.environ["AGENT_LOG"], "a")  # noqa: SIM115 - held for the process's life
next_id = 100


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def read() -> dict | None:
    line = sys.stdin.readline()
    log.write(line or "EOF\n")
    log.flush()
    return json.loads(line) if line else None


def chunk(text: str, message_id: str, **meta: dict) -> dict:
    update = {
        "sessionUpdate": "agent_message_chunk",
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }
    return {
        "method": "session/update",
        "params": {"sessionId": "s-1", "update": {**update, **meta.get("update", {})}, **meta.get("note", {})},
    }


def ask(call: str) -> bool:
    """One permission ask; True when the client cancelled the turn instead of answering alone."""
    global next_id
    send(
        {
            "id": next_id,
            "method": "session/request_permission",
            "params": {
                "sessionId": "s-1",
                "toolCall": {"toolCallId": call, "rawInput": {"command": f"ls {call}"}, "title": call},
                "options": [
                    {"optionId": "a1", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "r1", "name": "Reject", "kind": "reject_once"},
                ],
            },
        }
    )
    next_id += 1
    answer, cancelled = None, False
    while answer is None or (answer.get("result") == {"outcome": {"outcome": "cancelled"}} and not cancelled):
        message = read()  # the answer, and on a stop the turn's cancel too, in whichever order they come
        if message is None:
            return True
        if message.get("method") == "session/cancel":
            cancelled = True
        elif "method" not in message:
            answer = message
    return cancelled


def prompt(request_id: int) -> None:
    global next_id
    send(chunk("hello ", "m1"))
    send(chunk("world", "m1", update={"_meta": {"u": 2}}, note={"_meta": {"k": 1}}))
    for call in ("c-allow", "c-deny", "c-stop"):
        if ask(call):
            send({"id": request_id, "result": {"stopReason": "cancelled"}})
            return
    send({"id": next_id, "method": "fs/read_text_file", "params": {"sessionId": "s-1", "path": "/etc/hostname"}})
    next_id += 1
    read()
    send(chunk("final reply", "m2"))
    send({"id": request_id, "result": {"stopReason": "end_turn", "_meta": {"r": 3}}})


while (message := read()) is not None:
    method = message.get("method")
    if method == "initialize":
        send(
            {
                "id": message["id"],
                "result": {
                    "protocolVersion": 1,
                    "_meta": {"steering": {"supported": True}},
                    "agentCapabilities": {"promptCapabilities": {"image": True}, "sessionCapabilities": {"close": {}}},
                },
            }
        )
    elif method == "session/new":
        send({"id": message["id"], "result": {"sessionId": "s-1"}})
    elif method == "session/prompt":
        prompt(message["id"])
    elif method == "session/close":
        send({"id": message["id"], "result": {"_meta": {"closed": True}}})
    elif method == "_session/steering":
        send({"id": message["id"], "result": {"outcome": "steered"}})
    elif "id" in message and method:
        send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
