"""`arena view`'s server: the page under its policy, the catalog, transcripts, raw lines, logs and
search as JSON; a run followed as it grows (the generation a live page polls moves); a JSON error
for what is not there; nothing for a foreign Host."""

import asyncio
import json
import time

from aiohttp.test_utils import TestClient, TestServer

from arena.view import load_catalog
from arena.view.server import HOSTS, build_app
from arena_testkit.synthetic_runs import HOSTILE, episode_line, write_run


def test_the_server_sends_its_policy_serves_episodes_on_demand_and_refuses_other_hosts(tmp_path):
    run = write_run(tmp_path / "r", [episode_line("a", 1.0, trace_id="1", tool_output=HOSTILE)])
    (run / "vf-eval.log").write_text("the eval's log\n")
    app = build_app(load_catalog([run]), follow=False)

    async def scenario() -> None:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            page = await client.get("/")
            csp = page.headers["Content-Security-Policy"]
            assert page.status == 200 and "script-src 'self'" in csp and "require-trusted-types-for 'script'" in csp
            assert "frame-ancestors 'none'" in csp and page.headers["X-Content-Type-Options"] == "nosniff"
            assert (await client.get("/static/vendor/prism.js")).status == 200
            index = await (await client.get("/api/index.json")).json()
            assert index["runs"][0]["count"] == 1 and "rows" not in index["runs"][0]
            rows = await (await client.get("/api/run.json", params={"run": "r"})).json()
            assert rows["rows"][0]["task"] == "a" and rows["logs"][0]["name"] == "vf-eval.log"
            # the image the task's box ran, not the runtime config's default the task's own replaced
            assert rows["images"] == [rows["rows"][0]["image"]] == ["arena/fault-localisation:latest"]
            episode = await (await client.get("/api/episode.json", params={"run": "r", "i": "0"})).json()
            assert (
                episode["items"][3]["text"] == HOSTILE
            )  # data, escaped by the JSON encoder, rendered as text by the page
            raw = await client.get("/api/raw", params={"run": "r", "i": "0"})
            assert (
                raw.headers["Content-Type"].startswith("text/plain")
                and json.loads(await raw.text())["traces"][0]["id"] == "1"
            )
            log = await client.get("/api/log", params={"run": "r", "n": "0"})
            assert log.headers["Content-Type"].startswith("text/plain") and await log.text() == "the eval's log\n"
            hits = await (await client.get("/api/search.json", params={"run": "r", "q": "PWNED"})).json()
            assert hits["hits"] == [{"i": 0, "hits": 2}]
            missing = await client.get("/api/episode.json", params={"run": "r", "i": "5"})
            assert missing.status == 404 and "no episode 5" in (await missing.json())["error"]
            assert (await client.get("/api/episode.json", params={"run": "nope", "i": "0"})).status == 404
            assert (await client.get("/api/episode.json", params={"run": "r", "i": "x"})).status == 400
            assert (await client.get("/api/log", params={"run": "r", "n": "3"})).status == 404
            assert (await client.get("/static/../run.py")).status == 404
            app[HOSTS].add(f"127.0.0.1:{client.port}")
            assert (await client.get("/", headers={"Host": "attacker.example:80"})).status == 421
            assert (await client.get("/")).status == 200

    asyncio.run(scenario())


def test_the_server_follows_a_growing_run_and_a_new_run_folder(tmp_path):
    run = write_run(tmp_path / "o" / "r", [episode_line("a", 1.0, trace_id="1")])
    app = build_app(load_catalog([tmp_path / "o"]))

    async def until(client: TestClient, predicate, what: str) -> dict:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 10
        while True:
            index = await (await client.get("/api/index.json")).json()
            if predicate(index):
                return index
            assert time.monotonic() < deadline, f"the server never saw {what}"
            await asyncio.sleep(0.1)

    async def scenario() -> None:
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            start = (await (await client.get("/api/generation.json")).json())["generation"]
            with (run / "traces.jsonl").open("a") as f:
                f.write(json.dumps(episode_line("b", 0.0, trace_id="2")) + "\n")
            index = await until(client, lambda ix: ix["runs"][0]["count"] == 2, "the appended episode")
            assert index["generation"] > start and index["runs"][0]["status"] == "running"
            new = await (await client.get("/api/run.json", params={"run": "r", "start": "1"})).json()
            assert [row["task"] for row in new["rows"]] == ["b"]
            write_run(tmp_path / "o" / "s", [episode_line("a", 1.0, trace_id="3")])
            await until(client, lambda ix: [r["id"] for r in ix["runs"]] == ["r", "s"], "the new run folder")

    asyncio.run(scenario())
