"""The tool gate: each tool call is offered to the interception's gate before it runs (allow, deny with a message, stop)."""

from __future__ import annotations

import json
from typing import Any

from arena_kit.harnesses.arena_bash.program.wire import json_body, send_request


def gate_tool_call(url: str, api_key: str, call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = function.get("arguments")
    body = json_body({"tool_call_id": call.get("id"), "name": function.get("name"), "arguments": arguments})
    response = send_request(
        "POST", url, {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}, body, None
    )
    payload = response.read()
    response.close()
    if response.status >= 400:
        raise RuntimeError(f"tool gate answered HTTP {response.status} for {url}")
    decision: dict[str, Any] = json.loads(payload)
    if decision["action"] == "stop":
        raise RuntimeError(decision["reason"])
    return decision
