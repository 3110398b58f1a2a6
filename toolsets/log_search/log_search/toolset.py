"""The log_search MCP toolset: budgeted queries over one incident's log store, served once per eval.

Per-rollout facts travel in `LogSearchState` over verifiers' state channel: the host fills in
the store path, budget, window and service list in `Task.setup`; the toolset records the queries
used, a query log and the submission. A search or count costs one unit; everything else is free.
Mistakes the agent can fix are `ToolError`s that cost nothing. Anything unexpected is logged here
on the host and reported without its text, because exception text can carry host paths.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from arena.toolkit import SerialToolset
from log_search.store import GROUP_BYS, LEVELS, InvalidQuery, LogStore, Query, format_ts

__all__ = ["MAX_LIMIT", "LogSearchConfig", "LogSearchState", "LogSearchToolset", "QueryRecord", "ServiceInfo",
           "Submission"]

MAX_LIMIT = 200
_OPEN_STORES = 32
_LEVEL_ALIASES = {"WARNING": "WARN", "CRITICAL": "FATAL"}
logger = logging.getLogger(__name__)
T = TypeVar("T")


class LogSearchConfig(vf.SharedToolsetConfig):
    """Placement only: the server must run on the host that holds the log stores (the default)."""


class ServiceInfo(BaseModel):
    name: str
    role: str
    calls: list[str] = []
    """The services this one calls."""


class QueryRecord(BaseModel):
    tool: str
    args: dict[str, Any]
    matched: int


class Submission(BaseModel):
    service: str
    """A service name, or "none"."""
    fault_kind: str
    onset: str | None
    """Normalised ISO timestamp; None when service is "none"."""


class LogSearchState(vf.State):
    """One rollout's log_search state; the Task must declare this same class."""

    store_path: str = ""
    """Host path of the incident's log store (set by the host; never shown to the agent)."""
    budget: int = 0
    """Queries (search_logs, count_logs) this rollout may run."""
    window_start: str = ""
    window_end: str = ""
    services: list[ServiceInfo] = []
    fault_kinds: list[str] = []
    """The answer vocabulary submit_root_cause accepts."""
    queries_used: int = 0
    query_log: list[QueryRecord] = []
    submission: Submission | None = None


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _parse_time(name: str, value: str) -> int:
    try:
        moment = datetime.fromisoformat(value.strip())
    except (AttributeError, ValueError):
        raise ToolError(f"{name} must be an ISO 8601 UTC timestamp such as 2024-03-05T14:05:00Z, "
                        f"got {str(value)[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


class LogSearchToolset(SerialToolset[LogSearchConfig, LogSearchState]):
    TOOL_PREFIX = "log_search"

    def __init__(self, config: LogSearchConfig) -> None:
        super().__init__(config)
        self._stores: OrderedDict[str, LogStore] = OrderedDict()

    @vf.tool
    async def list_services(self) -> str:
        """List the incident's services: name, role (edge, service, worker, database, cache, queue,
        search) and `calls` (the services it depends on), plus the incident time window. Free."""
        state = self.state
        return _json({
            "window": {"start": state.window_start, "end": state.window_end},
            "services": [s.model_dump() for s in state.services],
        })

    @vf.tool
    async def search_logs(self, start: str, end: str, service: str | None = None, min_level: str | None = None,
                          text: str | None = None, limit: int = 50) -> str:
        """Return log lines matching all given filters, oldest first, as JSON: `lines` (each
        "<timestamp> <LEVEL> <service> <instance> trace=<id> <message>"), `matched` (total matching
        lines), `returned`, and `truncated: true` with a `note` when more lines matched than were
        returned. Costs 1 query from the budget.

        start, end: ISO 8601 UTC timestamps (e.g. 2024-03-05T14:05:00Z); start inclusive, end exclusive.
        service: one name from list_services. min_level: DEBUG, INFO, WARN, ERROR or FATAL (this
        level and more severe). text: SQLite FTS5 full-text query over the message: words must all
        appear (`timeout pool`), "quoted phrases", OR, NOT, prefix* ; double-quote any term with
        punctuation (`"orders-db"`, `"50/50"`). limit: 1-200 lines (default 50)."""
        query = self._query(start, end, service, min_level, text)
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        args = {"start": start, "end": end, "service": service, "min_level": min_level, "text": text, "limit": limit}
        lines, matched, lower_bound = await self._charged("search_logs", args, lambda s: s.search(query, limit),
                                                          lambda r: r[1])
        payload: dict[str, Any] = {"matched": matched, "returned": len(lines), "truncated": matched > len(lines)}
        if lower_bound:
            payload["matched_is_lower_bound"] = True
        if payload["truncated"]:
            payload["note"] = (f"showing the first {len(lines)} of {matched}{'+' if lower_bound else ''} matching "
                               f"lines; narrow the window or filters, or raise limit (max {MAX_LIMIT})")
        payload["lines"] = [line.render() for line in lines]
        payload["budget"] = self._budget()
        return _json(payload)

    @vf.tool
    async def count_logs(self, start: str, end: str, group_by: str = "service", service: str | None = None,
                         min_level: str | None = None, text: str | None = None) -> str:
        """Count log lines matching all given filters, grouped, as JSON: `counts` maps each group to
        its count (groups with no lines are left out) and `total` sums them. Costs 1 query.

        group_by: "service" (largest first), "level" (DEBUG..FATAL) or "minute" (chronological,
        keyed by the minute's ISO timestamp). start, end, service, min_level, text: as in
        search_logs."""
        query = self._query(start, end, service, min_level, text)
        if group_by not in GROUP_BYS:
            raise ToolError(f"group_by must be one of {', '.join(GROUP_BYS)}, got {str(group_by)[:40]!r}")
        args = {"start": start, "end": end, "group_by": group_by, "service": service, "min_level": min_level,
                "text": text}
        counts = await self._charged("count_logs", args, lambda s: s.count(query, group_by),
                                     lambda r: sum(r.values()))
        if group_by == "service":
            counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return _json({"group_by": group_by, "total": sum(counts.values()), "counts": counts,
                      "budget": self._budget()})

    @vf.tool
    async def budget(self) -> str:
        """Show the query budget as JSON: used, remaining, total. Free."""
        return _json(self._budget())

    @vf.tool
    async def submit_root_cause(self, service: str, fault_kind: str = "none", onset: str = "") -> str:
        """Submit your final answer; accepted once, a second submission is refused. Free.

        service: the root-cause service (a name from list_services), or "none" if there was no
        incident. fault_kind: one id from the fault-kind vocabulary in your instructions. onset:
        ISO 8601 UTC timestamp when the root cause began (e.g. 2024-03-05T14:05:12Z).
        fault_kind and onset are ignored when service is "none"."""
        state = self.state
        if state.submission is not None:
            raise ToolError("a root cause was already submitted; submissions are final")
        if service == "none":
            state.submission = Submission(service="none", fault_kind="none", onset=None)
            return _json({"accepted": True})
        self._check_service(service)
        if fault_kind not in state.fault_kinds:
            raise ToolError(f"fault_kind must be one of: {', '.join(state.fault_kinds)}")
        at = format_ts(_parse_time("onset", onset))
        state.submission = Submission(service=service, fault_kind=fault_kind, onset=at)
        return _json({"accepted": True})

    def _query(self, start: str, end: str, service: str | None, min_level: str | None, text: str | None) -> Query:
        start_ms, end_ms = _parse_time("start", start), _parse_time("end", end)
        if start_ms >= end_ms:
            raise ToolError("start must be before end")
        service = service or None
        if service is not None:
            self._check_service(service)
        level = None
        if min_level:
            level = _LEVEL_ALIASES.get(min_level.upper(), min_level.upper())
            if level not in LEVELS:
                raise ToolError(f"min_level must be one of {', '.join(LEVELS)}, got {min_level[:40]!r}")
        return Query(start_ms, end_ms, service, level, (text.strip() or None) if text else None)

    def _check_service(self, service: str) -> None:
        if service not in {s.name for s in self.state.services}:
            raise ToolError(f"unknown service {service[:60]!r}; call list_services for the valid names")

    def _budget(self) -> dict[str, int]:
        state = self.state
        return {"used": state.queries_used, "remaining": max(0, state.budget - state.queries_used),
                "total": state.budget}

    async def _charged(self, tool: str, args: dict[str, Any], run: Callable[[LogStore], T],
                       matched: Callable[[T], int]) -> T:
        """Run a query against this rollout's store and charge it, or raise without charging."""
        state = self.state
        if state.queries_used >= state.budget:
            raise ToolError(f"query budget spent ({state.queries_used} of {state.budget}); "
                            "submit your answer with submit_root_cause")
        store = self._store(state.store_path)
        try:
            result = await asyncio.to_thread(run, store)
        except InvalidQuery as e:
            raise ToolError(f"{e}: use plain words, \"quoted phrases\", OR, NOT and prefix*; double-quote "
                            "terms with punctuation such as \"orders-db\"; nothing was charged") from None
        except Exception:
            logger.exception("log_search %s failed on %s with %s", tool, state.store_path, args)
            raise ToolError("the log store could not run this query; nothing was charged") from None
        state.queries_used += 1
        state.query_log.append(QueryRecord(tool=tool, args={k: v for k, v in args.items() if v is not None},
                                           matched=matched(result)))
        return result

    def _store(self, path: str) -> LogStore:
        if path in self._stores:
            self._stores.move_to_end(path)
            return self._stores[path]
        try:
            if not path or not Path(path).is_file():
                raise FileNotFoundError(path)
            store = LogStore(Path(path))
        except Exception:
            logger.exception("log_search: cannot open a log store at %r", path)
            raise ToolError("no incident log is attached to this session; nothing was charged") from None
        self._stores[path] = store
        while len(self._stores) > _OPEN_STORES:
            self._stores.popitem(last=False)
        return store


if __name__ == "__main__":
    LogSearchToolset.run()
