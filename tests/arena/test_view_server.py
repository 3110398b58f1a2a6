"""`arena view`'s server: the page under its policy, the catalog and transcripts, and nothing for a
foreign Host or a missing episode."""

import asyncio

from aiohttp.test_utils import TestClient, TestServer

from arena.view import load_catalog
from arena.view.server import HOSTS, build_app
from arena_testkit.synthetic_runs import HOSTILE, episode_line, write_run


def test_the_server_sends_its_policy_serves_episodes_on_demand_and_refuses_other_hosts(tmp_path):
    run = write_run(tmp_path / "r", [episode_line("a", 1.0, trace_id="1", tool_output=HOSTILE)])
    app = build_app(load_catalog([run]))

    async def scenario() -> None:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            page = await client.get("/")
            csp = page.headers["Content-Security-Policy"]
            assert page.status == 200 and "script-src 'self'" in csp and "require-trusted-types-for 'script'" in csp
            assert "frame-ancestors 'none'" in csp and page.headers["X-Content-Type-Options"] == "nosniff"
            index = await (await client.get("/api/index.json")).json()
            assert index["runs"][0]["count"] == 1 and "items" not in index["runs"][0]["episodes"][0]
            episode = await (await client.get("/api/episode/0/0.json")).json()
            assert episode["items"][3]["text"] == HOSTILE  # data, escaped by the JSON encoder, rendered as text by the page
            assert (await client.get("/api/episode/0/5.json")).status == 404
            assert (await client.get("/static/../load.py")).status == 404
            app[HOSTS].add(f"127.0.0.1:{client.port}")
            assert (await client.get("/", headers={"Host": "attacker.example:80"})).status == 421
            assert (await client.get("/")).status == 200

    asyncio.run(scenario())
