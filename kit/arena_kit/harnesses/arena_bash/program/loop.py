"""The chat loop and its entry point: argv as verifiers' program takes it, tools dispatched, gated and bounded, compaction on a full context."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arena_kit.harnesses.arena_bash.program.compaction import (
    Compactor,
    bound_tool_message,
    compactable,
    discover_threshold,
    estimated_tokens,
    is_context_overflow,
)
from arena_kit.harnesses.arena_bash.program.gate import gate_tool_call
from arena_kit.harnesses.arena_bash.program.mcp_client import connect_mcp, mcp_content
from arena_kit.harnesses.arena_bash.program.model import ModelClient, StatusError
from arena_kit.harnesses.arena_bash.program.schemas import BASH_TOOL, EDIT_TOOL, SEARCH_TOOL
from arena_kit.harnesses.arena_bash.program.stream import dump_message
from arena_kit.harnesses.arena_bash.program.tools import run_bash, run_edit, run_search


def run_tool(
    args: argparse.Namespace, name: str | None, arguments: str | None, dispatch: dict[str, Any], servers: dict[str, Any]
) -> object:
    try:
        tool_args = json.loads(arguments or "{}")
    except json.JSONDecodeError as e:
        return f"error: invalid JSON in tool arguments ({e}); resend the call with valid JSON"
    if not isinstance(tool_args, dict):
        return f"error: tool arguments must be a JSON object, got {type(tool_args).__name__}; resend as an object"
    if name in dispatch:
        server_name, raw = dispatch[name]
        result = servers[server_name].run("tools/call", {"name": raw, "arguments": tool_args})
        return mcp_content(result.get("content") or [])
    if name == "bash" and args.bash:
        return run_bash(tool_args.get("command", ""))
    if name == "edit" and args.edit:
        return run_edit(tool_args.get("path"), tool_args.get("old_str"), tool_args.get("new_str"))
    if name == "search" and args.search:
        return run_search(tool_args.get("query", ""), args.serper_key, tool_args.get("num_results", 5))
    return f"error: unknown tool {name!r}"


def run_chat_loop(
    args: argparse.Namespace,
    compactor: Compactor,
    messages: list[Any],
    dispatch: dict[str, Any],
    servers: dict[str, Any],
) -> None:
    while True:
        try:
            completion, messages = compactor.complete(messages)
        except StatusError as error:
            compacting = compactor.enabled and compactor.threshold is not None
            if compacting or not is_context_overflow(error):
                raise
            return
        message = dump_message(completion["choices"][0]["message"])
        messages.append(message)
        if not message.get("tool_calls"):
            return
        tool_result_tokens = 0
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            name = function.get("name")
            tool_message = {"role": "tool", "tool_call_id": call.get("id"), "content": "", "name": name}
            if args.tool_interception_url:
                decision = gate_tool_call(args.tool_interception_url, args.api_key, call)
                if decision["action"] == "deny":
                    denied = bound_tool_message(decision["message"])
                    messages.append(denied)
                    tool_result_tokens += estimated_tokens(str(denied.get("content", "")))
                    continue
            tool_message["content"] = run_tool(args, name, function.get("arguments"), dispatch, servers)
            tool_message = bound_tool_message(tool_message)
            messages.append(tool_message)
            tool_result_tokens += estimated_tokens(str(tool_message["content"]))
        if compactor.reached(completion, tool_result_tokens) and compactable(messages):
            messages = compactor.compact(messages)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--system-prompt", default="")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--initial-messages-file", default="")
    parser.add_argument("--mcp-config", default="")
    parser.add_argument("--tool-interception-url", default="")
    parser.add_argument("--bash", action="store_true")
    parser.add_argument("--compaction", action="store_true")
    parser.add_argument("--summarize-at-tokens", type=int)
    parser.add_argument("--edit", action="store_true")
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--serper-key", default="")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    initial = []
    if args.initial_messages_file:
        path = Path(args.initial_messages_file)
        payload = path.read_bytes()
        path.unlink()
        initial = json.loads(payload)
    client = ModelClient(args.base_url, args.api_key, 600.0 if args.bash else None)
    config = json.loads(args.mcp_config or "{}")
    tools = [BASH_TOOL] if args.bash else []
    reserved = {"bash"} if args.bash else set()
    if args.edit:
        tools.append(EDIT_TOOL)
        reserved.add("edit")
    if args.search:
        tools.append(SEARCH_TOOL)
        reserved.add("search")
    mcp_tools, dispatch, servers = connect_mcp(config, reserved) if config.get("mcpServers") else ([], {}, {})
    tools += mcp_tools
    messages = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
    if initial:
        messages.extend(initial)
    elif args.prompt:
        messages.append({"role": "user", "content": args.prompt})
    compactor = Compactor(client, args.model, tools, args.compaction, args.summarize_at_tokens)
    if compactor.enabled and compactor.threshold is None:
        compactor.threshold = discover_threshold(client, args.model)
    compactor.last_good = len(messages)
    run_chat_loop(args, compactor, messages, dispatch, servers)


if __name__ == "__main__":
    main()
