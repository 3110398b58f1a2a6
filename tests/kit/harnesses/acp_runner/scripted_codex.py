#!/usr/bin/env python3
"""A scripted `codex app-server` for the runner's app-server side (`codex_stream`): logs its argv, the env the npm
launcher would give it and every line it reads, answers the adapter's reads, and plays one turn per `turn/start`:
two agent messages, then completed; with "fail" in the input a non-retried stream error and a failed turn; with
"wait" in the input it runs until a `turn/steer`, whose input it answers. Before its first turn it asks the client
one approval, which a client of a full-access session never gets from Codex."""

import json
import os
import sys

log = open(os.environ["CODEX_LOG"], "a")  # noqa: SIM115 - held for the process's life
log.write(
    json.dumps(
        {
            "argv": sys.argv[1:],
            "env": {k: os.environ.get(k) for k in ("CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT", "CODEX_HOME")},
        }
    )
    + "\n"
)
turns = 0


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def delta(turn: str, item: str, text: str) -> None:
    send(
        {
            "method": "item/agentMessage/delta",
            "params": {"threadId": "th-1", "turnId": turn, "itemId": item, "delta": text},
        }
    )


def completed(turn: str, status: str, error: dict | None = None) -> None:
    send(
        {
            "method": "turn/completed",
            "params": {"threadId": "th-1", "turn": {"id": turn, "status": status, "error": error}},
        }
    )


RESULTS = {
    "initialize": {"userAgent": "scripted"},
    "account/read": {"account": None, "requiresOpenaiAuth": True},
    "config/read": {"config": {}},
    "skills/list": {"data": []},
    "thread/start": {"thread": {"id": "th-1", "model": "m"}},
    "model/list": {"data": [{"id": "known", "defaultReasoningEffort": "high"}], "nextCursor": None},
    "turn/steer": {"turnId": "steered"},
}
waiting: str | None = None
for line in sys.stdin:
    log.write(line)
    log.flush()
    message = json.loads(line)
    method = message.get("method")
    if method is None:
        continue  # the client's answer to the approval it was asked
    if method != "turn/start":
        send({"id": message["id"], "result": RESULTS[method]})
        if method == "turn/steer" and waiting:
            delta(waiting, "a-3", "steered: " + message["params"]["input"][0]["text"])
            completed(waiting, "completed")
            waiting = None
        continue
    turns += 1
    turn = f"tu-{turns}"
    text = " ".join(item.get("text", "") for item in message["params"]["input"])
    send({"id": message["id"], "result": {"turn": {"id": turn, "status": "inProgress"}}})
    send({"method": "turn/started", "params": {"threadId": "th-1", "turn": {"id": turn}}})
    if turns == 1:
        send({"id": 900, "method": "item/commandExecution/requestApproval", "params": {"threadId": "th-1"}})
    delta(turn, "a-1", "looking")
    if "wait" in text:
        waiting = turn
        continue
    if "fail" in text:
        error = {
            "message": "stream disconnected",
            "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
        }
        send({"method": "error", "params": {"threadId": "th-1", "turnId": turn, "willRetry": False, "error": error}})
        completed(turn, "failed", error)
        continue
    delta(turn, "a-2", "final ")
    delta(turn, "a-2", "reply")
    send(
        {"method": "turn/completed", "params": {"threadId": "other", "turn": {"id": "x", "status": "failed"}}}
    )  # another thread's
    completed(turn, "completed")
log.write("EOF\n")
