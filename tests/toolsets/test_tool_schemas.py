"""Each toolset's tools as the model reads them: closed choices are listed, and a bad choice is refused in words.

The toolsets are served as verifiers serves them (`arena_testkit.mcp_memory`: the real server,
registration and argument middleware, in this process). The model reads what verifiers' bash
harness makes of that server's answers: `connect_mcp` hands each listed tool's `input_schema` to
the model unchanged as the function's parameters, and a call's reply is
`mcp_content_to_chat_content` of the result.
"""

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from verifiers.v1.harnesses.utils.mcp import mcp_content_to_chat_content

from arena_testkit.log_fixture import END, SERVICES, START, synthetic_store
from arena_testkit.mcp_memory import InProcessToolset, serving_toolset
from log_search.toolset import LogSearchConfig, LogSearchToolset
from sqlite_sandbox.state import SandboxConfig
from sqlite_sandbox.toolset import SqliteSandboxToolset

LEVELS = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL"]
CHOICES: dict[str, dict[str, dict[str, list[str]]]] = {
    "log_search": {
        "search_logs": {"min_level": LEVELS},
        "count_logs": {"group_by": ["service", "level", "minute"], "min_level": LEVELS},
    },
    "sqlite_sandbox": {},
}
"""Per toolset, every tool argument with a closed set of values and those values; the rest are open."""
TOOLSETS = {
    "log_search": lambda: LogSearchToolset(LogSearchConfig()),
    "sqlite_sandbox": lambda: SqliteSandboxToolset(SandboxConfig()),
}
WINDOW = {"start": START, "end": END}


def listed_choices(parameters: dict[str, Any]) -> dict[str, list[str]]:
    """The arguments whose schema lists an `enum` (directly or in an `anyOf` branch), with its values."""
    choices = {}
    for name, schema in parameters.get("properties", {}).items():
        for branch in [schema, *schema.get("anyOf", [])]:
            if "enum" in branch:
                choices[name] = branch["enum"]
    return choices


@pytest.fixture(scope="module")
def log_search() -> Iterator[InProcessToolset]:
    with serving_toolset(LogSearchToolset(LogSearchConfig())) as served:
        yield served


def reply(server: InProcessToolset, route: str, tool: str, arguments: dict[str, Any]) -> Any:
    """The tool result as the bash harness shows it to the model."""

    async def call() -> Any:
        async with server.client(route) as client:
            return mcp_content_to_chat_content((await client.call_tool(tool, arguments)).content)

    return asyncio.run(call())


@pytest.mark.parametrize("package", sorted(CHOICES))
def test_every_closed_tool_argument_lists_its_choices_in_the_schema_the_model_reads(package):
    async def listed(server: InProcessToolset) -> dict[str, dict[str, list[str]]]:
        async with server.client(uuid.uuid4().hex) as client:
            return {tool.name: listed_choices(tool.input_schema) for tool in (await client.list_tools()).tools}

    with serving_toolset(TOOLSETS[package]()) as server:
        tools = asyncio.run(listed(server))
    assert tools, f"{package} served no tools"
    assert {name: choices for name, choices in tools.items() if choices} == CHOICES[package]


LEVEL_CHOICES = "'DEBUG', 'INFO', 'WARN', 'ERROR' or 'FATAL'"
BAD_CHOICES = [
    pytest.param(
        "count_logs",
        {"group_by": "instance"},
        "group_by",
        "'service', 'level' or 'minute'",
        "'instance'",
        id="group_by",
    ),
    pytest.param("count_logs", {"min_level": "LOUD"}, "min_level", LEVEL_CHOICES, "'LOUD'", id="count-min_level"),
    pytest.param(
        "search_logs", {"min_level": "verbose"}, "min_level", LEVEL_CHOICES, "'VERBOSE'", id="search-min_level-any-case"
    ),
    pytest.param("search_logs", {"min_level": 3}, "min_level", LEVEL_CHOICES, "3", id="search-min_level-number"),
]


@pytest.mark.parametrize(("tool", "arguments", "argument", "choices", "shown"), BAD_CHOICES)
def test_a_value_outside_the_choices_is_refused_naming_the_choices_and_nothing_runs(
    log_search, tool, arguments, argument, choices, shown
):
    refused = reply(log_search, uuid.uuid4().hex, tool, {**WINDOW, **arguments})
    assert refused == f"{argument} is invalid (Input should be {choices}), got {shown}. Nothing was run or charged."


@pytest.mark.parametrize(
    ("given", "level"), [("warning", "WARN"), ("CRITICAL", "FATAL"), ("error", "ERROR"), ("", None)]
)
def test_level_aliases_any_case_and_empty_are_still_accepted_beside_the_listed_choices(
    log_search, tmp_path, given, level
):
    route = uuid.uuid4().hex
    log_search.channel.states[route] = {
        "store_path": str(synthetic_store(tmp_path)),
        "budget": 5,
        "window_start": START,
        "window_end": END,
        "services": [{"name": s, "role": "service", "calls": []} for s in SERVICES],
        "fault_kinds": [],
    }
    aliased, canonical = (
        json.loads(reply(log_search, route, "count_logs", {**WINDOW, "min_level": value})) for value in (given, level)
    )
    assert aliased["counts"] == canonical["counts"] and aliased["total"] > 0
    assert [record["args"].get("min_level") for record in log_search.state(route)["query_log"]] == [level, level]
