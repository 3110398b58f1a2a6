"""LogSearchToolset through MCP sessions on one shared server, with a real state channel.

The server runs in this process behind in-memory clients; one test serves it from its own process
over HTTP, as verifiers launches it.
"""

import asyncio
import json
import uuid

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from verifiers.v1.mcp.server import _call_state

from arena_testkit.log_fixture import END, SERVICES, START, synthetic_store
from arena_testkit.mcp_memory import serving_toolset
from arena_testkit.mcp_session import call, result_text, running_toolset
from log_search.store import LogStore
from log_search.toolset import LOGGED_CHARS, LogSearchConfig, LogSearchState, LogSearchToolset

KINDS = ["connection_pool_exhaustion", "disk_full"]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    return synthetic_store(tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def server():
    with serving_toolset(LogSearchToolset(LogSearchConfig())) as served:
        yield served


def rollout(server, path, budget: int = 5, **overrides) -> str:
    """A fresh rollout route whose state the host filled in as Task.setup does."""
    route = uuid.uuid4().hex
    server.channel.states[route] = {
        "store_path": str(path),
        "budget": budget,
        "window_start": START,
        "window_end": END,
        "services": [{"name": s, "role": "service", "calls": []} for s in SERVICES],
        "fault_kinds": KINDS,
        **overrides,
    }
    return route


def tool(server, route: str, name: str, **arguments):
    return asyncio.run(call(server, route, name, arguments))


def used(server, route: str) -> int:
    """Queries charged so far (a state the toolset never changed was never pushed back)."""
    return server.state(route).get("queries_used", 0)


def payload(result) -> dict:
    assert not result.is_error, result_text(result)
    return json.loads(result_text(result))


@pytest.mark.slow
def test_the_toolset_serves_rollouts_over_http_from_its_own_process(store_path):
    with running_toolset("log_search.toolset") as process:
        route = rollout(process, store_path, budget=2)
        found = payload(tool(process, route, "count_logs", start=START, end=END, group_by="level"))
        refused = tool(process, route, "search_logs", start=START, end=END, colour="red")
        assert found["total"] == 3000 and found["budget"] == {"used": 1, "remaining": 1, "total": 2}
        assert refused.is_error and "unknown argument 'colour'" in result_text(refused)
        assert used(process, route) == 1 and process.state(route)["query_log"][0]["tool"] == "count_logs"


def test_tools_are_served_with_descriptions_that_state_their_cost(server):
    async def listed():
        async with server.client(uuid.uuid4().hex) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t.description or "" for t in asyncio.run(listed())}
    assert set(tools) == {"list_services", "search_logs", "count_logs", "budget", "submit_root_cause"}
    assert "Costs 1 query" in tools["search_logs"] and "Costs 1 query" in tools["count_logs"]
    assert all("Free" in tools[name] for name in ("list_services", "budget", "submit_root_cause"))


def test_listing_services_and_reading_the_budget_are_free(server, store_path):
    route = rollout(server, store_path, budget=4)
    listed = payload(tool(server, route, "list_services"))
    assert [s["name"] for s in listed["services"]] == list(SERVICES)
    assert listed["window"] == {"start": START, "end": END}
    assert payload(tool(server, route, "budget")) == {"used": 0, "remaining": 4, "total": 4}
    assert used(server, route) == 0


def test_a_search_returns_matching_lines_oldest_first_and_costs_one_query(server, store_path):
    route = rollout(server, store_path)
    found = payload(
        tool(server, route, "search_logs", start=START, end=END, service="payments", min_level="ERROR", limit=200)
    )
    stamps = [line.split(" ", 1)[0] for line in found["lines"]]
    assert stamps == sorted(stamps) and found["returned"] == len(stamps) > 0
    assert all(line.split(" ")[1:3] in (["ERROR", "payments"], ["FATAL", "payments"]) for line in found["lines"])
    assert found["budget"] == {"used": 1, "remaining": 4, "total": 5}
    state = server.state(route)
    assert state["queries_used"] == 1
    assert state["query_log"][0]["tool"] == "search_logs" and state["query_log"][0]["matched"] == found["matched"]


def test_a_search_marks_truncation_only_when_more_lines_match_than_it_returns(server, store_path):
    route = rollout(server, store_path)
    cut = payload(tool(server, route, "search_logs", start=START, end=END, limit=3))
    assert cut["truncated"] is True and cut["returned"] == 3 and cut["matched"] > 3
    assert "first 3 of" in cut["note"]
    whole = payload(tool(server, route, "search_logs", start=START, end="2024-03-05T14:00:05Z", limit=200))
    assert whole["truncated"] is False and "note" not in whole and whole["returned"] == whole["matched"]


def test_counts_group_by_service_level_or_minute(server, store_path):
    route = rollout(server, store_path)
    by_service = payload(tool(server, route, "count_logs", start=START, end=END, group_by="service"))
    by_level = payload(tool(server, route, "count_logs", start=START, end=END, group_by="level"))
    by_minute = payload(tool(server, route, "count_logs", start=START, end=END, group_by="minute", text="pool"))
    assert set(by_service["counts"]) == set(SERVICES)
    assert list(by_service["counts"].values()) == sorted(by_service["counts"].values(), reverse=True)
    assert by_service["total"] == by_level["total"] == 3000
    severity = ("DEBUG", "INFO", "WARN", "ERROR", "FATAL")
    assert list(by_level["counts"]) == [level for level in severity if level in by_level["counts"]]
    assert list(by_minute["counts"]) == sorted(by_minute["counts"]) and 0 < by_minute["total"] < 3000
    assert used(server, route) == 3


def test_a_query_past_the_budget_is_refused_with_no_data(server, store_path):
    route = rollout(server, store_path, budget=2)
    for _ in range(2):
        payload(tool(server, route, "count_logs", start=START, end=END))
    refused = tool(server, route, "search_logs", start=START, end=END)
    assert refused.is_error
    text = result_text(refused)
    assert "query budget spent (2 of 2)" in text and "submit_root_cause" in text
    assert "lines" not in text and "trace=" not in text
    assert used(server, route) == 2


def test_concurrent_queries_of_one_rollout_cannot_overspend_its_budget(server, store_path):
    route = rollout(server, store_path, budget=3)

    async def burst():
        return await asyncio.gather(
            *(call(server, route, "count_logs", {"start": START, "end": END}) for _ in range(8))
        )

    results = asyncio.run(burst())
    assert sum(not r.is_error for r in results) == 3
    assert all("query budget spent (3 of 3)" in result_text(r) for r in results if r.is_error)
    assert used(server, route) == 3 and len(server.state(route)["query_log"]) == 3


def test_a_trace_filter_returns_only_that_requests_lines_and_costs_one_query(server, store_path):
    route = rollout(server, store_path)
    found = payload(tool(server, route, "search_logs", start=START, end=END, trace="0000000000000005"))
    assert found["matched"] == found["returned"] == 1
    assert "trace=0000000000000005 " in found["lines"][0] and found["lines"][0].endswith(" id=5")
    # as copied from a line: upper case and the `trace=` prefix are accepted
    again = payload(tool(server, route, "count_logs", start=START, end=END, trace="trace=000000000000000A"))
    assert again["total"] == 1
    unknown = payload(tool(server, route, "count_logs", start=START, end=END, trace="ffffffffffffffff"))
    assert unknown["total"] == 0 and unknown["counts"] == {}
    assert used(server, route) == 3
    assert [r["args"]["trace"] for r in server.state(route)["query_log"]] == [
        "0000000000000005",
        "000000000000000a",
        "ffffffffffffffff",
    ]


def test_search_and_count_document_the_trace_filter(server):
    async def listed():
        async with server.client(uuid.uuid4().hex) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(listed())}
    for name in ("search_logs", "count_logs"):
        assert "trace" in tools[name].input_schema["properties"]
        assert "only that request's lines, across every service it crossed" in " ".join(
            (tools[name].description or "").split()
        )


WINDOW = {"start": START, "end": END}
CHEAP_WAIT_S = 10.0
"""How long a cheap count may wait beside heavy queries: it answers in milliseconds; the bound only
catches it queued behind them (each may work for 2 s, `log_search.store.QUERY_DEADLINE_S`)."""
BAD_INPUT = [
    pytest.param("search_logs", {**WINDOW, "service": "billing"}, "unknown service", id="unknown-service"),
    pytest.param("search_logs", {**WINDOW, "start": "yesterday"}, "ISO 8601", id="malformed-start"),
    pytest.param("count_logs", {**WINDOW, "end": "14:00"}, "ISO 8601", id="malformed-end"),
    pytest.param("search_logs", {"start": END, "end": START}, "start must be before end", id="reversed-window"),
    pytest.param("count_logs", {"start": START, "end": START}, "start must be before end", id="empty-window"),
    pytest.param("search_logs", {**WINDOW, "limit": 201}, "limit must be between 1 and 200", id="limit-too-large"),
    pytest.param("search_logs", {**WINDOW, "limit": 0}, "limit must be between 1 and 200", id="limit-zero"),
    pytest.param("search_logs", {**WINDOW, "text": '"unclosed'}, "not a valid full-text query", id="malformed-text"),
    pytest.param(
        "count_logs", {**WINDOW, "text": "orders-db"}, "not a valid full-text query", id="unquoted-punctuation"
    ),
    pytest.param(
        "count_logs",
        {**WINDOW, "group_by": "instance"},
        "group_by is invalid (Input should be 'service', 'level' or 'minute'), got 'instance'",
        id="unknown-group-by",
    ),
    pytest.param(
        "count_logs",
        {**WINDOW, "min_level": "LOUD"},
        "min_level is invalid (Input should be 'DEBUG', 'INFO', 'WARN', 'ERROR' or 'FATAL'), got 'LOUD'",
        id="unknown-level",
    ),
    pytest.param("search_logs", {**WINDOW, "trace": "12345"}, "16-hex-digit trace id", id="short-trace"),
    pytest.param("count_logs", {**WINDOW, "trace": "0000000000000005x"}, "16-hex-digit trace id", id="long-trace"),
    pytest.param("search_logs", {**WINDOW, "trace": "' OR 1=1 --"}, "16-hex-digit trace id", id="injected-trace"),
    pytest.param("search_logs", {**WINDOW, "text": "timeout " * 126}, "the limit is 1000", id="text-too-long"),
    pytest.param(
        "count_logs",
        {**WINDOW, "text": "pool " * 65},
        "65 words, phrases and operators, the limit is 64",
        id="text-too-many-terms",
    ),
    pytest.param(
        "search_logs",
        {**WINDOW, "colour": "red"},
        "unknown argument 'colour'; search_logs takes start, end, service, min_level, text, trace, limit",
        id="unknown-argument",
    ),
    pytest.param(
        "count_logs", {**WINDOW, "start": "0001-01-01T00:00:00+01:00"}, "start must lie between", id="year-0-start"
    ),
    pytest.param(
        "search_logs", {**WINDOW, "end": "9999-12-31T23:59:59-14:00"}, "end must lie between", id="year-10000-end"
    ),
]


@pytest.mark.parametrize(("name", "arguments", "message"), BAD_INPUT)
def test_bad_input_is_refused_clearly_and_costs_nothing(server, store_path, name, arguments, message):
    route = rollout(server, store_path)
    result = tool(server, route, name, **arguments)
    text = result_text(result)
    assert result.is_error and message in text
    assert "Traceback" not in text and str(store_path.parent) not in text
    assert used(server, route) == 0


def test_a_missing_store_is_reported_without_its_path_and_costs_nothing(server, store_path):
    missing = store_path.parent / "gone" / "incident.sqlite"
    route = rollout(server, store_path, store_path=str(missing))
    result = tool(server, route, "count_logs", start=START, end=END)
    assert result.is_error and "no incident log" in result_text(result)
    assert str(store_path.parent) not in result_text(result)
    assert used(server, route) == 0


def test_a_root_cause_is_accepted_once(server, store_path):
    route = rollout(server, store_path)
    first = tool(
        server,
        route,
        "submit_root_cause",
        service="payments",
        fault_kind="disk_full",
        evidence=["trace=0000000000000005", "000000000000000A"],
    )
    assert payload(first) == {"accepted": True}
    second = tool(server, route, "submit_root_cause", service="gateway", fault_kind="disk_full")
    assert second.is_error and "already submitted" in result_text(second)
    assert server.state(route)["submission"] == {
        "service": "payments",
        "fault_kind": "disk_full",
        "evidence": ["0000000000000005", "000000000000000a"],
        "lines": [],
    }
    assert used(server, route) == 0  # checking the cited requests is free


def test_a_report_may_quote_lines_of_its_cited_requests_as_they_were_printed(server, store_path):
    route = rollout(server, store_path)
    [line] = payload(tool(server, route, "search_logs", start=START, end=END, trace="0000000000000005"))["lines"]
    other = payload(tool(server, route, "search_logs", start=START, end=END, trace="0000000000000006"))["lines"][0]
    refused = tool(
        server,
        route,
        "submit_root_cause",
        service="payments",
        fault_kind="disk_full",
        evidence=["0000000000000005"],
        lines=[other],
    )
    assert refused.is_error and "lines[1] is not a line of a cited request" in result_text(refused)
    accepted = tool(
        server,
        route,
        "submit_root_cause",
        service="payments",
        fault_kind="disk_full",
        evidence=["0000000000000005"],
        lines=[f"  {line} "],
    )
    assert payload(accepted) == {"accepted": True}
    assert server.state(route)["submission"]["lines"] == [line]


def test_a_search_by_trace_id_records_which_services_it_showed(server, store_path):
    route = rollout(server, store_path)
    found = payload(tool(server, route, "search_logs", start=START, end=END, trace="0000000000000005"))
    payload(tool(server, route, "search_logs", start=START, end=END, limit=3))
    payload(tool(server, route, "count_logs", start=START, end=END, trace="0000000000000005"))
    by_trace, plain, counted = server.state(route)["query_log"]
    assert by_trace["services"] == [found["lines"][0].split(" ")[2]]
    assert plain.get("services") is None and counted.get("services") is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({"service": "billing", "fault_kind": "disk_full"}, "unknown service", id="service"),
        pytest.param({"service": "NONE", "fault_kind": "none"}, 'submit service "none"', id="none-in-capitals"),
        pytest.param({"service": "payments", "fault_kind": "gremlins"}, "fault_kind must be one of", id="kind"),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "evidence": ["12345"]},
            "evidence must be a 16-hex-digit trace id",
            id="malformed-id",
        ),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "evidence": ["ffffffffffffffff"]},
            "which is no request of this incident's log",
            id="unknown-id",
        ),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "evidence": [f"{i:016x}" for i in range(4)]},
            "the limit is 3",
            id="too-many-ids",
        ),
        pytest.param(
            {"service": "none", "evidence": ["0000000000000005"]},
            'a "none" report cites no request',
            id="none-with-evidence",
        ),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "lines": ["anything"]},
            "evidence cites no request",
            id="lines-without-evidence",
        ),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "evidence": ["0000000000000005"], "lines": ["x"] * 6},
            "the limit is 5",
            id="too-many-lines",
        ),
        pytest.param(
            {"service": "payments", "fault_kind": "disk_full", "onset": START},
            "unknown argument 'onset'",
            id="onset-is-gone",
        ),
    ],
)
def test_an_invalid_submission_is_refused_and_leaves_the_answer_open(server, store_path, arguments, message):
    route = rollout(server, store_path)
    refused = tool(server, route, "submit_root_cause", **arguments)
    assert refused.is_error and message in result_text(refused)
    assert server.state(route).get("submission") is None
    assert payload(tool(server, route, "submit_root_cause", service="none")) == {"accepted": True}


def test_no_incident_is_submitted_as_service_none(server, store_path):
    route = rollout(server, store_path, budget=0)
    assert payload(tool(server, route, "submit_root_cause", service="none")) == {"accepted": True}
    assert server.state(route)["submission"] == {"service": "none", "fault_kind": "none", "evidence": [], "lines": []}


def test_the_query_log_keeps_a_bounded_copy_of_each_query(server, store_path):
    route = rollout(server, store_path)
    phrase = '"' + "timeout pool " * 70 + '"'
    assert len(phrase) > 900
    payload(tool(server, route, "count_logs", start=START, end=END, text=phrase))
    record = server.state(route)["query_log"][0]
    assert record["args"]["text"] == phrase[:LOGGED_CHARS] + "…"
    assert record["args"]["start"] == START and record["matched"] == 0


def test_heavy_queries_of_other_rollouts_do_not_starve_a_cheap_one(server, store_path):
    heavy_text = "timeout " * 6_000  # 48 KB, as measured in issue 11
    heavy_routes = [rollout(server, store_path) for _ in range(7)]
    cheap_route = rollout(server, store_path)

    async def burst() -> tuple[list, object]:
        heavy = [
            asyncio.create_task(call(server, r, "search_logs", {**WINDOW, "text": heavy_text})) for r in heavy_routes
        ]
        await asyncio.sleep(0)
        # A bounded wait, not a stopwatch: starved behind seven heavy queries, the cheap one would miss it.
        cheap = await asyncio.wait_for(
            call(server, cheap_route, "count_logs", {**WINDOW, "group_by": "level"}), CHEAP_WAIT_S
        )
        return await asyncio.gather(*heavy), cheap

    heavy, cheap = asyncio.run(burst())
    assert all(r.is_error and "the limit is 1000" in result_text(r) for r in heavy)
    assert all(used(server, r) == 0 for r in heavy_routes)
    assert payload(cheap)["total"] == 3000


def test_a_query_past_the_work_deadline_is_stopped_and_costs_nothing(store_path):
    toolset = LogSearchToolset(LogSearchConfig())
    toolset._stores[str(store_path)] = LogStore(store_path, deadline_s=0.0)
    state = LogSearchState(store_path=str(store_path), budget=3, window_start=START, window_end=END)

    async def search() -> str:
        token = _call_state.set(state)
        try:
            return await toolset.search_logs(START, END, text="timeout OR pool")
        finally:
            _call_state.reset(token)

    with pytest.raises(ToolError, match="was stopped; narrow the window.*nothing was charged"):
        asyncio.run(search())
    assert state.queries_used == 0 and state.query_log == []


ODD_VALUES = [
    10**30,
    -1,
    0,
    1.5,
    float("inf"),
    "NaN",
    None,
    True,
    "   ",
    {"nested": {"a": [1, 2]}},
    [1, "x"],
    "ünïcødé ☃ 日本",
    "\x00\n\t",
    "'; DROP TABLE logs; --",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-14:00",
    "2024-03-05T14:00:00+99:00",
    "x" * 5_000,
]
FUZZED = {
    "search_logs": ({**WINDOW}, ["start", "end", "service", "min_level", "text", "trace", "limit"]),
    "count_logs": ({**WINDOW}, ["start", "end", "group_by", "service", "min_level", "text", "trace"]),
    "submit_root_cause": (
        {"service": "payments", "fault_kind": "disk_full", "evidence": ["0000000000000005"]},
        ["service", "fault_kind", "evidence", "lines"],
    ),
}
INTERNAL = (
    "Traceback",
    "validation error",
    "pydantic",
    "out of range",
    "has no attribute",
    "NoneType",
    "unsupported operand",
    "invalid literal",
    "Errno",
    "sqlite3",
    "OperationalError",
    "object is not",
)


@pytest.mark.slow
def test_odd_argument_values_get_a_worded_refusal_or_a_proper_result(server, store_path):
    cases = [
        (name, {**base, arg: value}, arg)
        for name, (base, args) in FUZZED.items()
        for arg in args
        for value in ODD_VALUES
    ]
    routes = [rollout(server, store_path) for _ in cases]
    gate = asyncio.Semaphore(16)

    async def one(route: str, name: str, arguments: dict):
        async with gate:
            return await call(server, route, name, json.loads(json.dumps(arguments, allow_nan=True)))

    async def run_all() -> list:
        return await asyncio.gather(
            *(one(route, name, arguments) for route, (name, arguments, _) in zip(routes, cases))
        )

    results = asyncio.run(run_all())
    refused = 0
    for route, (name, arguments, arg), result in zip(routes, cases, results):
        text = result_text(result)
        where = f"{name}({arg}={arguments[arg]!r:.60})"
        if result.is_error:
            refused += 1
            assert arg in text or "unknown service" in text, f"{where} was refused without naming it: {text}"
            assert not any(marker in text for marker in INTERNAL), f"{where} leaked internal text: {text}"
            assert str(store_path.parent) not in text
            assert used(server, route) == 0 and server.state(route).get("submission") is None
        else:
            assert isinstance(json.loads(text), dict), where
    assert 0 < refused < len(cases)
