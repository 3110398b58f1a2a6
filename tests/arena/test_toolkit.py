"""SerialToolset: a per-rollout budget holds under concurrent calls through real MCP sessions."""

import asyncio

from arena_testkit.mcp_session import call, result_text, running_toolset


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
