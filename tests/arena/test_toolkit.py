"""SerialToolset: per-rollout budgets hold under concurrency, bad arguments are refused for free, and
per-rollout locks do not outlive their calls."""

import asyncio

import pytest
import verifiers.v1 as vf
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from verifiers.v1.mcp.server import STATE_ROUTE_PARAM, STATE_SIGNATURE_PARAM, STATE_URL_PARAM, _request_query_params

from arena_kit.toolset import argument_refusal
from arena_testkit.counter_toolset import CounterToolset
from arena_testkit.mcp_session import call, result_text, running_toolset


@pytest.mark.slow
def test_concurrent_calls_of_one_rollout_cannot_overspend_its_budget():
    async def run() -> list:
        with running_toolset("arena_testkit.counter_toolset") as server:
            server.channel.states["r1"] = {"budget": 3, "used": 0}
            results = await asyncio.gather(*(call(server, "r1", "spend") for _ in range(8)))
            return results, server.state("r1")

    results, state = asyncio.run(run())
    ok = [r for r in results if not r.is_error]
    refused = [r for r in results if r.is_error]
    assert len(ok) == 3
    assert len(refused) == 5
    assert all("budget spent (3 of 3)" in result_text(r) for r in refused)
    assert state["used"] == 3


@pytest.mark.slow
def test_rollouts_keep_separate_budgets_on_one_shared_server():
    async def run() -> tuple:
        with running_toolset("arena_testkit.counter_toolset") as server:
            server.channel.states["a"] = {"budget": 1, "used": 0}
            server.channel.states["b"] = {"budget": 2, "used": 0}
            a = [await call(server, "a", "spend") for _ in range(2)]
            b = [await call(server, "b", "spend") for _ in range(2)]
            return a, b, server.state("a"), server.state("b")

    a, b, state_a, state_b = asyncio.run(run())
    assert [r.is_error for r in a] == [False, True]
    assert [r.is_error for r in b] == [False, False]
    assert state_a["used"] == 1 and state_b["used"] == 2


@pytest.mark.slow
def test_an_unknown_argument_is_refused_by_name_for_free():
    async def run() -> tuple:
        with running_toolset("arena_testkit.counter_toolset") as server:
            server.channel.states["r"] = {"budget": 3, "used": 0}
            refused = await call(server, "r", "spend", {"amount": 2})
            spent = await call(server, "r", "spend")
            return refused, spent, server.state("r")

    refused, spent, state = asyncio.run(run())
    assert refused.is_error
    assert "unknown argument 'amount'; spend takes no arguments" in result_text(refused)
    assert "Nothing was run or charged" in result_text(refused)
    assert not spent.is_error and state["used"] == 1


def _search(start: str, end: str, service: str | None = None, limit: int = 50) -> str:
    return ""


SEARCH = func_metadata(_search)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            {"start": "a", "end": "b", "colour": "red"},
            "unknown argument 'colour'; _search takes start, end, service, limit",
            id="unknown",
        ),
        pytest.param({"start": "a", "end": "b", "x": 1, "y": 2}, "unknown arguments 'x', 'y'", id="two-unknown"),
        pytest.param({"start": "a"}, "end is required; _search takes start, end, service, limit", id="missing"),
        pytest.param(
            {"start": "a", "end": "b", "limit": "NaN"},
            "limit is invalid (Input should be a valid integer",
            id="nan-limit",
        ),
        pytest.param({"start": "a", "end": "b", "limit": 1.5}, "limit is invalid", id="fractional-limit"),
        pytest.param(
            {"start": {"nested": ["x"] * 100}, "end": "b"},
            "start is invalid (Input should be a valid string)",
            id="nested-start",
        ),
        pytest.param({"start": "a", "end": None}, "end is invalid", id="null-end"),
    ],
)
def test_argument_refusals_name_the_argument_and_what_it_takes(arguments, message):
    refusal = argument_refusal("_search", SEARCH, arguments)
    assert refusal is not None and message in refusal
    assert "pydantic" not in refusal and "validation error" not in refusal and len(refusal) < 300


@pytest.mark.parametrize(
    "arguments",
    [{"start": "a", "end": "b"}, {"start": "a", "end": "b", "service": None}, {"start": "a", "end": "b", "limit": "7"}],
)
def test_valid_arguments_pass(arguments):
    assert argument_refusal("_search", SEARCH, arguments) is None


def _forged(route: str) -> dict[str, list[str]]:
    return {
        STATE_URL_PARAM: ["http://127.0.0.1:9/state"],
        STATE_ROUTE_PARAM: [route],
        STATE_SIGNATURE_PARAM: ["0" * 64],
    }


def test_forged_rollouts_leave_no_lock_behind(monkeypatch):
    monkeypatch.delenv("VF_STATE_URL", raising=False)
    monkeypatch.setenv("VF_STATE_SECRET", "secret")
    toolset = CounterToolset(vf.ToolsetConfig())
    spend = toolset._with_state(toolset.spend)

    async def run() -> int:
        refused = 0
        for i in range(5_000):
            token = _request_query_params.set(_forged(f"forged-{i}"))
            try:
                await spend()
            except ValueError:
                refused += 1
            finally:
                _request_query_params.reset(token)
        return refused

    assert asyncio.run(run()) == 5_000
    assert toolset._rollout_locks == {}


def test_a_rollout_lock_lives_only_while_a_call_holds_or_waits_for_it(monkeypatch):
    monkeypatch.delenv("VF_STATE_URL", raising=False)
    toolset = CounterToolset(vf.ToolsetConfig())
    spend = toolset._with_state(toolset.spend)

    async def run() -> tuple[list[int], dict]:
        seen: list[int] = []
        calls = [asyncio.create_task(spend()) for _ in range(4)]
        while not all(c.done() for c in calls):
            seen.append(sum(slot.users for slot in toolset._rollout_locks.values()))
            await asyncio.sleep(0.01)
        await asyncio.gather(*calls)
        return seen, dict(toolset._rollout_locks)

    seen, after = asyncio.run(run())
    assert max(seen) == 4 and after == {}
