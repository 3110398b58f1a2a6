"""The log_search MCP toolset: budgeted queries over one incident's log store, served once per eval.

Per-rollout facts travel in `LogSearchState` over verifiers' state channel: the host fills in
the store path, budget, window and service list in `Task.setup`; the toolset records the queries
used, a query log and the submission. A search or count costs one unit; everything else is free.
Mistakes the agent can fix are `ToolError`s that cost nothing. Anything unexpected is logged here
on the host and reported without its text, because exception text can carry host paths.
"""

# No `from __future__ import annotations`: verifiers copies each tool's signature with
# `inspect.signature(fn)` (annotations left as strings), and the MCP SDK cannot resolve a string
# naming this module's types (`GroupBy`, `MinLevel`) when it builds the tool's schema.
import asyncio
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, BeforeValidator

from arena_kit.toolset import SerialToolset
from log_search.store import (
    GROUP_BYS,
    LEVELS,
    GroupBy,
    InvalidQuery,
    Level,
    LogLine,
    LogStore,
    Query,
    QueryTooCostly,
)

__all__ = [
    "MAX_EVIDENCE",
    "MAX_LIMIT",
    "MAX_QUOTED_LINES",
    "MAX_TEXT_CHARS",
    "MAX_TEXT_TERMS",
    "LogSearchConfig",
    "LogSearchState",
    "LogSearchToolset",
    "MinLevel",
    "QueryRecord",
    "ServiceInfo",
    "Submission",
    "count_payload",
    "parse_group_by",
    "parse_query",
    "parse_report",
    "search_payload",
]

MAX_LIMIT = 200
MAX_EVIDENCE = 3
"""Requests (trace ids) one report may cite."""
MAX_QUOTED_LINES = 5
"""Log lines one report may quote."""
MAX_TEXT_CHARS = 1_000
MAX_TEXT_TERMS = 64
"""Words, phrases and operators in one full-text query; FTS5 work grows with each."""
QUERY_THREADS = 8
"""Store queries in flight at once across all rollouts. Each rollout runs one at a time
(SerialToolset) and each query stops at the store's deadline, so a queued query waits at most
about (queued / QUERY_THREADS) deadlines."""
LOGGED_CHARS = 200
"""Longest argument value kept in a query_log record; the state travels on every call."""
_TEXT_TERM = re.compile(r'"[^"]*"?|[^\s()"]+')
_EARLIEST_MS, _LATEST_MS = 0, 253_402_300_799_999  # 1970-01-01 .. 9999-12-31T23:59:59.999Z
_OPEN_STORES = 32
_LEVEL_ALIASES = {"WARNING": "WARN", "CRITICAL": "FATAL"}
_TRACE_ID = re.compile(r"[0-9a-f]{16}")
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
    services: list[str] | None = None
    """For a search by trace id: the services whose lines it returned (what the agent saw of
    that request); None for any other query."""


class Submission(BaseModel):
    service: str
    """A service name, or "none"."""
    fault_kind: str
    evidence: list[str] = []
    """The trace ids (normalised) of the requests the claim rests on; none for "none"."""
    lines: list[str] = []
    """Log lines of those requests the report quotes, as search_logs printed them."""


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


def _level_name(value: object) -> object:
    """A level as the store spells it: any case, WARNING and CRITICAL as aliases, empty as unset."""
    if not isinstance(value, str):
        return value
    if not value:
        return None
    return _LEVEL_ALIASES.get(value.upper(), value.upper())


MinLevel = Annotated[Level | None, BeforeValidator(_level_name)]
"""A tool's `min_level`: the schema lists the five levels; the aliases are accepted too."""


def _parse_time(name: str, value: str) -> int:
    try:
        moment = datetime.fromisoformat(value.strip())
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        ms = int(moment.timestamp() * 1000)
    except (AttributeError, ValueError, OverflowError, OSError):
        raise ToolError(
            f"{name} must be an ISO 8601 UTC timestamp such as 2024-03-05T14:05:00Z, got {str(value)[:40]!r}"
        ) from None
    if not _EARLIEST_MS <= ms <= _LATEST_MS:
        raise ToolError(f"{name} must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z, got {value[:40]!r}")
    return ms


def _text(value: str | None) -> str | None:
    text = value.strip() if value else ""
    if not text:
        return None
    if len(text) > MAX_TEXT_CHARS:
        raise ToolError(
            f"text is {len(text)} characters, the limit is {MAX_TEXT_CHARS}; search for a few "
            "distinctive words or phrases; nothing was charged"
        )
    terms = len(_TEXT_TERM.findall(text))
    if terms > MAX_TEXT_TERMS:
        raise ToolError(
            f"text has {terms} words, phrases and operators, the limit is {MAX_TEXT_TERMS}; "
            "split it into narrower queries; nothing was charged"
        )
    return text


def _logged(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as a query_log record keeps them: no unset ones, long values cut."""
    return {
        k: v[:LOGGED_CHARS] + "…" if isinstance(v, str) and len(v) > LOGGED_CHARS else v
        for k, v in args.items()
        if v is not None
    }


def _trace_id(value: str | None, name: str = "trace") -> str | None:
    if not value:
        return None
    trace = value.strip().lower().removeprefix("trace=")
    if not _TRACE_ID.fullmatch(trace):
        raise ToolError(f"{name} must be a 16-hex-digit trace id as printed in a line (trace=<id>), got {value[:40]!r}")
    return trace


def parse_report(service: str, evidence: list[str] | None, lines: list[str] | None) -> tuple[list[str], list[str]]:
    """The cited trace ids (normalised, deduplicated) and quoted lines of a report, checked for
    shape (not yet against the log). Pure.

    Raises:
        ToolError: a "none" report that cites or quotes anything, too many ids or lines, a
            malformed id or an overlong line (nothing is submitted).
    """
    evidence, lines = evidence or [], lines or []
    if service == "none" and (evidence or lines):
        raise ToolError('a "none" report cites no request and quotes no line: drop evidence and lines')
    ids = list(dict.fromkeys(_trace_id(value, "evidence") or "" for value in evidence))
    if "" in ids:
        raise ToolError("evidence must list trace ids, got an empty one")
    if len(ids) > MAX_EVIDENCE:
        raise ToolError(
            f"evidence cites {len(ids)} requests, the limit is {MAX_EVIDENCE}: cite the ones the claim rests on"
        )
    if len(lines) > MAX_QUOTED_LINES:
        raise ToolError(f"lines quotes {len(lines)} lines, the limit is {MAX_QUOTED_LINES}")
    if lines and not ids:
        raise ToolError("lines quotes log lines but evidence cites no request: quote lines of the cited requests")
    if any(len(line) > MAX_TEXT_CHARS for line in lines):
        raise ToolError(
            f"lines holds a line longer than {MAX_TEXT_CHARS} characters; quote it as search_logs printed it"
        )
    return ids, [line.strip() for line in lines]


def parse_query(
    start: str,
    end: str,
    service: str | None,
    min_level: str | None,
    text: str | None,
    trace: str | None,
    services: Collection[str],
) -> Query:
    """The store query for these tool arguments, checked as the tools check them (`services`: the
    valid names). Pure: training code answers tool calls offline through it.

    Raises:
        ToolError: an argument the agent can fix (nothing is charged).
    """
    start_ms, end_ms = _parse_time("start", start), _parse_time("end", end)
    if start_ms >= end_ms:
        raise ToolError("start must be before end")
    service = service or None
    if service is not None:
        _check_service(service, services)
    name = _level_name(min_level)
    level = next((known for known in LEVELS if known == name), None)
    if name is not None and level is None:
        raise ToolError(f"min_level must be one of {', '.join(LEVELS)}, got {str(min_level)[:40]!r}")
    return Query(start_ms, end_ms, service, level, _text(text), _trace_id(trace))


def parse_group_by(group_by: object) -> GroupBy:
    """count_logs' grouping, checked as the tool's schema checks it. Pure, like `parse_query`.

    Raises:
        ToolError: not one of GROUP_BYS (nothing is charged).
    """
    for known in GROUP_BYS:
        if group_by == known:
            return known
    raise ToolError(f"group_by must be one of {', '.join(GROUP_BYS)}, got {str(group_by)[:40]!r}")


def _check_service(service: str, services: Collection[str], submitting: bool = False) -> None:
    if service not in services:
        none = '; submit service "none" (lower case) if nothing went wrong' if submitting else ""
        raise ToolError(f"unknown service {service[:60]!r}; call list_services for the valid names{none}")


def search_payload(result: tuple[list[LogLine], int, bool]) -> dict[str, Any]:
    """search_logs' answer (without the budget) for a store search's result."""
    lines, matched, lower_bound = result
    payload: dict[str, Any] = {"matched": matched, "returned": len(lines), "truncated": matched > len(lines)}
    if lower_bound:
        payload["matched_is_lower_bound"] = True
    if payload["truncated"]:
        payload["note"] = (
            f"showing the first {len(lines)} of {matched}{'+' if lower_bound else ''} matching "
            f"lines; narrow the window or filters, or raise limit (max {MAX_LIMIT})"
        )
    payload["lines"] = [line.render() for line in lines]
    return payload


def count_payload(counts: dict[str, int], group_by: GroupBy) -> dict[str, Any]:
    """count_logs' answer (without the budget) for a store count's result."""
    if group_by == "service":
        counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"group_by": group_by, "total": sum(counts.values()), "counts": counts}


# SerialToolset subclasses verifiers' untyped Toolset, so mypy does not see its type parameters.
class LogSearchToolset(SerialToolset[LogSearchConfig, LogSearchState]):
    TOOL_PREFIX = "log_search"

    def __init__(self, config: LogSearchConfig) -> None:
        super().__init__(config)
        self._stores: OrderedDict[str, LogStore] = OrderedDict()
        # Not asyncio's default pool: that one also runs the SDK's and httpx's blocking work.
        self._queries = ThreadPoolExecutor(QUERY_THREADS, thread_name_prefix="log-search-query")

    @vf.tool
    async def list_services(self) -> str:
        """List the incident's services: name, role (edge, service, worker, database, cache, queue,
        search) and `calls` (the services it depends on), plus the incident time window. Free."""
        state = self.state
        return _json(
            {
                "window": {"start": state.window_start, "end": state.window_end},
                "services": [s.model_dump() for s in state.services],
            }
        )

    @vf.tool
    async def search_logs(
        self,
        start: str,
        end: str,
        service: str | None = None,
        min_level: MinLevel = None,
        text: str | None = None,
        trace: str | None = None,
        limit: int = 50,
    ) -> str:
        """Return log lines matching all given filters, oldest first, as JSON: `lines` (each
        "<timestamp> <LEVEL> <service> <instance> trace=<id> <message>"), `matched` (total matching
        lines), `returned`, and `truncated: true` with a `note` when more lines matched than were
        returned. Costs 1 query from the budget.

        start, end: ISO 8601 UTC timestamps (e.g. 2024-03-05T14:05:00Z); start inclusive, end exclusive.
        service: one name from list_services. min_level: DEBUG, INFO, WARN, ERROR or FATAL (this
        level and more severe). text: SQLite FTS5 full-text query over the message: words must all
        appear (`timeout pool`), "quoted phrases", OR, NOT, prefix* ; double-quote any term with
        punctuation (`"orders-db"`, `"50/50"`); at most 1,000 characters and 64 words, phrases and
        operators. trace: a trace id from a line (`trace=<id>`): only that request's lines, across
        every service it crossed. limit: 1-200 lines (default 50). A query that needs more than
        2 seconds of work is stopped and costs nothing."""
        query = self._query(start, end, service, min_level, text, trace)
        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_LIMIT}, got {str(limit)[:40]}")
        args = {
            "start": start,
            "end": end,
            "service": service,
            "min_level": min_level,
            "text": text,
            "trace": query.trace,
            "limit": limit,
        }
        result = await self._charged(
            "search_logs",
            args,
            lambda s: s.search(query, limit),
            lambda r: r[1],
            (lambda r: sorted({line.service for line in r[0]})) if query.trace else None,
        )
        return _json({**search_payload(result), "budget": self._budget()})

    @vf.tool
    async def count_logs(
        self,
        start: str,
        end: str,
        group_by: GroupBy = "service",
        service: str | None = None,
        min_level: MinLevel = None,
        text: str | None = None,
        trace: str | None = None,
    ) -> str:
        """Count log lines matching all given filters, grouped, as JSON: `counts` maps each group to
        its count (groups with no lines are left out) and `total` sums them. Costs 1 query.

        group_by: "service" (largest first), "level" (DEBUG..FATAL) or "minute" (chronological,
        keyed by the minute's ISO timestamp). start, end, service, min_level, text: as in
        search_logs. trace: a trace id from a line (`trace=<id>`): only that request's lines, across
        every service it crossed."""
        query = self._query(start, end, service, min_level, text, trace)
        args = {
            "start": start,
            "end": end,
            "group_by": group_by,
            "service": service,
            "min_level": min_level,
            "text": text,
            "trace": query.trace,
        }
        counts = await self._charged("count_logs", args, lambda s: s.count(query, group_by), lambda r: sum(r.values()))
        return _json({**count_payload(counts, group_by), "budget": self._budget()})

    @vf.tool
    async def budget(self) -> str:
        """Show the query budget as JSON: used, remaining, total. Free."""
        return _json(self._budget())

    @vf.tool
    async def submit_root_cause(
        self, service: str, fault_kind: str = "none", evidence: list[str] | None = None, lines: list[str] | None = None
    ) -> str:
        """Submit your final report; accepted once, a second submission is refused. Free.

        service: the root-cause service (a name from list_services), or "none" if there was no
        incident. fault_kind: one id from the fault-kind vocabulary in your instructions.
        evidence: the trace ids (1 to 3) of the requests the claim rests on, as printed in their
        lines (trace=<id>); each must be a request of this incident's log. Your instructions say
        which requests support a claim (typically failed requests you opened with
        search_logs(trace=<id>) whose lines show the named service failing). lines (optional): up to
        5 log lines of the cited requests, quoted exactly as search_logs printed them. A "none"
        report takes no fault_kind, evidence or lines. A malformed report is refused with the
        reason, and you may submit again."""
        state = self.state
        if state.submission is not None:
            raise ToolError("a root cause was already submitted; submissions are final")
        ids, quoted = parse_report(service, evidence, lines)
        if service == "none":
            state.submission = Submission(service="none", fault_kind="none")
            return _json({"accepted": True})
        self._check_service(service, submitting=True)
        if fault_kind not in state.fault_kinds:
            raise ToolError(f"fault_kind must be one of: {', '.join(state.fault_kinds)}")
        if ids:
            await self._check_cited(ids, quoted)
        state.submission = Submission(service=service, fault_kind=fault_kind, evidence=ids, lines=quoted)
        return _json({"accepted": True})

    async def _check_cited(self, ids: list[str], quoted: list[str]) -> None:
        """Every cited id is a request of this incident's log, every quoted line one of their lines."""
        state = self.state
        store = self._store(state.store_path)
        start, end = _parse_time("window start", state.window_start), _parse_time("window end", state.window_end)

        def read(s: LogStore) -> dict[str, set[str]]:
            return {
                trace: {line.render() for line in s.search(Query(start, end, trace=trace), MAX_LIMIT)[0]}
                for trace in ids
            }

        try:
            found = await asyncio.get_running_loop().run_in_executor(self._queries, read, store)
        except Exception:
            logger.exception("log_search submit_root_cause could not read %s", state.store_path)
            raise ToolError("the log store could not check the cited requests; nothing was submitted") from None
        missing = [trace for trace in ids if not found[trace]]
        if missing:
            raise ToolError(
                f"evidence cites {missing[0]}, which is no request of this incident's log; cite trace "
                "ids as printed in the lines search_logs returned"
            )
        printed = set().union(*found.values())
        for i, line in enumerate(quoted, 1):
            if line not in printed:
                raise ToolError(f"lines[{i}] is not a line of a cited request as search_logs printed it: {line[:80]!r}")

    def _query(
        self, start: str, end: str, service: str | None, min_level: str | None, text: str | None, trace: str | None
    ) -> Query:
        return parse_query(start, end, service, min_level, text, trace, {s.name for s in self.state.services})

    def _check_service(self, service: str, submitting: bool = False) -> None:
        _check_service(service, {s.name for s in self.state.services}, submitting)

    def _budget(self) -> dict[str, int]:
        state = self.state
        return {
            "used": state.queries_used,
            "remaining": max(0, state.budget - state.queries_used),
            "total": state.budget,
        }

    async def _charged(
        self,
        tool: str,
        args: dict[str, Any],
        run: Callable[[LogStore], T],
        matched: Callable[[T], int],
        services: Callable[[T], list[str]] | None = None,
    ) -> T:
        """Run a query against this rollout's store and charge it, or raise without charging."""
        state = self.state
        if state.queries_used >= state.budget:
            raise ToolError(
                f"query budget spent ({state.queries_used} of {state.budget}); "
                "submit your answer with submit_root_cause"
            )
        store = self._store(state.store_path)
        try:
            result = await asyncio.get_running_loop().run_in_executor(self._queries, run, store)
        except QueryTooCostly:
            raise ToolError(
                f"the query needed more than {store.deadline_s:g} s of work and was stopped; narrow "
                "the window, add service or min_level, or use fewer and more specific words; "
                "nothing was charged"
            ) from None
        except InvalidQuery as e:
            raise ToolError(
                f'{e}: use plain words, "quoted phrases", OR, NOT and prefix*; double-quote '
                'terms with punctuation such as "orders-db"; nothing was charged'
            ) from None
        except Exception:
            logger.exception("log_search %s failed on %s with %s", tool, state.store_path, args)
            raise ToolError("the log store could not run this query; nothing was charged") from None
        state.queries_used += 1
        state.query_log.append(
            QueryRecord(
                tool=tool,
                args=_logged(args),
                matched=matched(result),
                services=None if services is None else services(result),
            )
        )
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
