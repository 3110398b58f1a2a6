"""The sqlite_sandbox toolset through MCP sessions, on a database inside a real container.

The server runs in this process behind in-memory clients; one test serves it from its own process
over HTTP, as verifiers launches it. The tools reach the container through verifiers' docker runtime
(re-attached from the recorded `DockerRuntimeInfo`); the Docker SDK here only sets up fixtures.
"""

import asyncio
import io
import os
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator

import docker
import pytest
from sqlite_sandbox.state import SandboxConfig, SandboxState, checkpoint_path
from sqlite_sandbox.toolset import SqliteSandboxToolset
from verifiers.v1.runtimes import DockerRuntimeInfo

from arena_testkit.mcp_memory import serving_toolset
from arena_testkit.mcp_session import ToolsetServer, call, result_text, running_toolset

pytestmark = pytest.mark.docker

LABELS = {"arena.managed": "true", "arena.session": f"pytest-sqlite-sandbox-{os.getpid()}"}


def _start(client: docker.DockerClient, image: str):
    return client.containers.run(image, ["sleep", "infinity"], detach=True, labels=LABELS, network_mode="none")


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    c = docker.from_env(timeout=120)
    yield c
    c.close()


@pytest.fixture(scope="module")
def container(client, images):
    box = _start(client, images["base"])
    try:
        yield box
    finally:
        box.remove(force=True)


@pytest.fixture(scope="module")
def server() -> Iterator[ToolsetServer]:
    with serving_toolset(SqliteSandboxToolset(SandboxConfig())) as served:
        yield served


def _database(rows: int = 5) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/db.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(1, rows + 1)])
        conn.commit()
        conn.close()
        with open(path, "rb") as f:
            return f.read()


def _prepare(server: ToolsetServer, box, route: str, budget: int = 10, rows: int = 5) -> dict:
    """Write a fresh database and its `start` checkpoint into the container for rollout `route`."""
    data = _database(rows)
    state = SandboxState(
        box=DockerRuntimeInfo(id=box.id[:12]),
        db_path=f"/app/{route}.sqlite",
        checkpoint_dir=f"/var/tmp/sqlite_sandbox/{route}",
        statement_budget=budget,
    )
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path in (state.db_path, checkpoint_path(state.checkpoint_dir, "start")):
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert box.put_archive("/", archive.getvalue())
    server.channel.states[route] = state.model_dump(mode="json")
    return server.channel.states[route]


def _run(coro):
    return asyncio.run(coro)


async def _sql(server: ToolsetServer, route: str, sql: str):
    return await call(server, route, "execute", {"sql": sql})


def _count(server: ToolsetServer, route: str) -> str:
    result = _run(_sql(server, route, "SELECT count(*) AS n FROM t"))
    assert not result.is_error, result_text(result)
    return result_text(result).splitlines()[2]


def test_the_toolset_serves_rollouts_over_http_from_its_own_process(container):
    with running_toolset("sqlite_sandbox.toolset") as process:
        _prepare(process, container, "http")
        assert _count(process, "http") == "[5]"
        refused = _run(call(process, "http", "execute", {"sql": "SELECT 1", "mode": "fast"}))
        assert refused.is_error and "unknown argument 'mode'" in result_text(refused)
        assert process.state("http")["statements_used"] == 1


def test_execute_runs_in_the_container_and_each_call_is_all_or_nothing(server, container):
    _prepare(server, container, "tx")
    ok = _run(_sql(server, "tx", "INSERT INTO t VALUES (100, 'a'); SELECT v FROM t WHERE id = 100"))
    assert not ok.is_error and '["a"]' in result_text(ok)
    bad = _run(_sql(server, "tx", "INSERT INTO t VALUES (101, 'b'); INSERT INTO t VALUES (100, 'dup')"))
    assert bad.is_error
    assert "statement 2 of 2" in result_text(bad) and "unchanged" in result_text(bad)
    assert _count(server, "tx") == "[6]"
    assert server.state("tx")["statements_used"] == 3


def test_the_agents_shell_and_the_tools_see_the_same_database(server, container):
    state = _prepare(server, container, "shared")
    code, _ = container.exec_run(["sqlite3", state["db_path"], "INSERT INTO t VALUES (50, 'from shell')"])
    assert code == 0
    assert _count(server, "shared") == "[6]"


def test_rollback_returns_to_start_and_checkpoints_can_be_restored(server, container):
    _prepare(server, container, "ck")
    _run(_sql(server, "ck", "DELETE FROM t WHERE id = 1"))
    assert "'start'" in result_text(_run(call(server, "ck", "rollback")))
    assert _count(server, "ck") == "[5]"
    _run(_sql(server, "ck", "DELETE FROM t WHERE id <= 2"))
    assert not _run(call(server, "ck", "checkpoint", {"name": "three-left"})).is_error
    _run(_sql(server, "ck", "DELETE FROM t"))
    assert _count(server, "ck") == "[0]"
    assert not _run(call(server, "ck", "rollback")).is_error
    assert _count(server, "ck") == "[3]"
    assert not _run(call(server, "ck", "restore", {"name": "start"})).is_error
    assert _count(server, "ck") == "[5]"
    missing = _run(call(server, "ck", "restore", {"name": "nope"}))
    assert missing.is_error and "three-left" in result_text(missing)
    bad_name = _run(call(server, "ck", "checkpoint", {"name": "../etc"}))
    assert bad_name.is_error and "invalid" in result_text(bad_name)
    assert server.state("ck")["checkpoints"] == ["start", "three-left"]


def test_concurrent_executes_of_one_rollout_cannot_overspend_the_budget(server, container):
    _prepare(server, container, "budget", budget=3)

    async def burst():
        return await asyncio.gather(
            *(_sql(server, "budget", f"INSERT INTO t VALUES ({200 + k}, 'x')") for k in range(8))
        )

    results = _run(burst())
    assert sum(not r.is_error for r in results) == 3
    refused = [result_text(r) for r in results if r.is_error]
    assert len(refused) == 5 and all("budget spent (3 of 3)" in text for text in refused)
    assert server.state("budget")["statements_used"] == 3
    assert "0 left" in result_text(_run(call(server, "budget", "budget")))
    inside = container.exec_run(["sqlite3", "/app/budget.sqlite", "SELECT count(*) FROM t"])
    assert inside.output.decode().strip() == "8"


def test_malformed_sql_gives_a_clear_error_costs_one_statement_and_the_server_stays_up(server, container):
    _prepare(server, container, "bad")
    result = _run(_sql(server, "bad", "SELEC oops FROM t"))
    text = result_text(result)
    assert result.is_error and "syntax error" in text and "rolled back" in text
    assert "Traceback" not in text and "/work/" not in text and "site-packages" not in text
    assert server.state("bad")["statements_used"] == 1
    assert _count(server, "bad") == "[5]"


def test_huge_output_is_truncated_with_a_marker(server, container):
    _prepare(server, container, "huge")
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) SELECT x, printf('%.150c', 'z') FROM c"
    text = result_text(_run(_sql(server, "huge", sql)))
    assert "[output truncated" in text
    assert len(text) < 8000


def test_submit_migration_is_accepted_once_and_stored_in_state(server, container):
    _prepare(server, container, "submit")
    refused = _run(call(server, "submit", "submit_migration", {"sql": "ATTACH 'x' AS y; SELECT 1;"}))
    assert refused.is_error and "ATTACH" in result_text(refused)
    first = _run(call(server, "submit", "submit_migration", {"sql": "ALTER TABLE t ADD COLUMN w TEXT;"}))
    assert not first.is_error and "accepted" in result_text(first)
    second = _run(call(server, "submit", "submit_migration", {"sql": "SELECT 1;"}))
    assert second.is_error and "already submitted" in result_text(second)
    assert server.state("submit")["submission"] == "ALTER TABLE t ADD COLUMN w TEXT;"


def test_a_request_too_big_for_one_argument_still_runs(server, container):
    # Linux caps one exec argument at 128 KiB: 99,000 newlines are 198 KB of JSON.
    _prepare(server, container, "big")
    result = _run(_sql(server, "big", "SELECT length('" + "\n" * 99_000 + "') AS n"))
    assert not result.is_error, result_text(result)
    assert "[99000]" in result_text(result)
    leftovers = container.exec_run(["ls", "-A", "/var/tmp/sqlite_sandbox/big"]).output.decode().split()
    assert leftovers == ["start.sqlite"]


def test_schema_shows_create_statements_and_row_counts(server, container):
    _prepare(server, container, "schema")
    text = result_text(_run(call(server, "schema", "schema")))
    assert "CREATE TABLE t" in text and "-- 5 rows" in text


def test_a_dead_container_gives_a_clear_error_and_other_rollouts_keep_working(server, container, client, images):
    doomed = _start(client, images["base"])
    try:
        _prepare(server, doomed, "dead")
        doomed.stop(timeout=1)
        stopped = _run(_sql(server, "dead", "SELECT 1"))
        assert stopped.is_error and "sandbox is not running" in result_text(stopped)
    finally:
        doomed.remove(force=True)
    gone = _run(_sql(server, "dead", "SELECT 1"))
    assert gone.is_error and "sandbox is gone" in result_text(gone)
    assert server.state("dead")["statements_used"] == 0
    _prepare(server, container, "alive")
    assert _count(server, "alive") == "[5]"


def test_tools_refuse_a_rollout_whose_sandbox_was_never_set_up(server):
    server.channel.states["unset"] = SandboxState().model_dump()
    result = _run(_sql(server, "unset", "SELECT 1"))
    assert result.is_error and "not set up" in result_text(result)


def test_a_docker_box_is_borrowed_over_the_engine_api_and_never_removed(container):
    """The docker path runs the engine through verifiers' runtime interface on the Engine API (no
    `docker exec` CLI process per call, ~3 ms of host CPU instead of ~16) and, being borrowed,
    never stops or removes the rollout's box, however the handle ends."""
    from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime
    from sqlite_sandbox.boxes import attach

    async def go() -> tuple[object, int, str]:
        async with attach(DockerRuntimeInfo(id=container.id[:12])) as runtime:
            result = await runtime.run(["sh", "-c", "echo in-box"], {})
            runtime.cleanup()
            await runtime.teardown()
            return runtime, result.exit_code, result.stdout

    runtime, code, out = asyncio.run(go())
    assert isinstance(runtime, LeanDockerRuntime) and (code, out) == (0, "in-box\n")
    container.reload()
    assert container.status == "running"


def test_a_borrowed_docker_box_is_alive_by_the_engines_word_not_the_boxs(container):
    """`_dead` decides whether a failed call was the box dying (free) or the box answering (charged):
    a root agent replacing `true` must not make its live box read as dead."""
    from sqlite_sandbox.boxes import attach

    async def go() -> bool:
        async with attach(DockerRuntimeInfo(id=container.id[:12])) as runtime:
            await runtime.run(
                ["sh", "-c", "printf '#!/bin/sh\\nexit 1\\n' > /usr/local/bin/true && chmod +x /usr/local/bin/true"], {}
            )
            try:
                return await runtime.alive()
            finally:
                await runtime.run(["rm", "-f", "/usr/local/bin/true"], {})

    assert asyncio.run(go()) is True


@pytest.mark.parametrize(
    ("user", "reads_root_s_file"), [(None, True), ("agent", False)], ids=["as-root", "as-the-agent"]
)
def test_the_agent_s_sql_runs_as_the_agent_so_a_symlinked_database_reads_nothing_its_shell_could_not(
    server, container, user, reads_root_s_file
):
    """The agent can point its database path at any file (a symlink in its workdir); the tools then open
    that file as whoever runs them. As root they would read root's files; as the agent, only the agent's."""
    route = f"symlink-{user or 'root'}"
    state = _prepare(server, container, route)
    secret = f"/root/secret-{route}.sqlite"
    made = container.exec_run(
        [
            "sh",
            "-c",
            f"sqlite3 {secret} \"CREATE TABLE s (v TEXT); INSERT INTO s VALUES ('root-only');\" "
            f"&& chmod 600 {secret} && ln -sf {secret} {state['db_path']}",
        ]
    )
    assert made.exit_code == 0, made.output
    assert container.exec_run(["sh", "-c", f"cat {secret}"], user="agent").exit_code != 0  # the agent's shell cannot
    if user is not None:
        server.channel.states[route] = {**state, "agent_user": user}
    result = _run(_sql(server, route, "SELECT v FROM s"))
    assert ("root-only" in result_text(result)) is reads_root_s_file, result_text(result)
    if not reads_root_s_file:
        assert result.is_error, result_text(result)
