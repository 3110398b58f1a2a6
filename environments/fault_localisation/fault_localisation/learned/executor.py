"""Answers a plan's tool calls offline from an incident's log store, through the toolset's own query code (the kit's `Executor` hook)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from arena_kit.policy import CallTool
from log_search.store import InvalidQuery, LogStore, Query, QueryTooCostly
from log_search.toolset import MAX_LIMIT, count_payload, parse_group_by, parse_query, search_payload

__all__ = ["Executor"]


class Executor:
    """One incident's tools as the agent sees them, minus the budget: each call's parsed JSON result,
    `{}` for a call the tool would refuse (as `first_json` reads an error)."""

    def __init__(self, store: LogStore, window: dict[str, str], services: list[dict[str, Any]]) -> None:
        self.store = store
        self.window = window
        self.services = services
        self.names = {str(s["name"]) for s in services}
        self.charged = 0
        self.calls: list[CallTool] = []

    def __call__(self, call: CallTool) -> dict[str, Any]:
        self.calls.append(call)
        args = dict(call.arguments)
        name = call.name.split("__")[-1].removeprefix("log_search_")
        try:
            if name == "list_services":
                payload: dict[str, Any] = {"window": self.window, "services": self.services}
            elif name == "search_logs":
                limit = int(args.get("limit", 50))
                query = self._query(args)
                if not 1 <= limit <= MAX_LIMIT:
                    return {}
                payload = search_payload(self.store.search(query, limit))
                self.charged += 1
            elif name == "count_logs":
                group_by = parse_group_by(args.get("group_by", "service"))
                query = self._query(args)
                payload = count_payload(self.store.count(query, group_by), group_by)
                self.charged += 1
            else:
                return {}
        except (ToolError, InvalidQuery, QueryTooCostly):
            return {}
        result: dict[str, Any] = json.loads(json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
        return result

    def _query(self, args: dict[str, Any]) -> Query:
        return parse_query(
            args["start"],
            args["end"],
            args.get("service"),
            args.get("min_level"),
            args.get("text"),
            args.get("trace"),
            self.names,
        )
