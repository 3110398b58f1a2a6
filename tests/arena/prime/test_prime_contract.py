"""Contract test of OUR side of the Prime path: the real prime-sandboxes client and verifiers' real
prime runtime against a local stand-in of Prime's API backed by containers (tests/support/prime_standin).

It proves that every route, RPC and file call a rollout makes is one the SDK really makes and that
our tasksets and toolsets score correctly through them. It proves nothing about Prime's image
builder, tunnels (host-side MCP servers reach the box through `BridgeTunnel`, a labelled local
relay), egress enforcement or auth expiry. The boxes' `/tmp` is an empty tmpfs as on a Prime VM
(what it hides is mimicked; its size is not).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from arena.server import start_in_thread
from arena_kit.policy import Answer, CallTool, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit import SUPPORT
from arena_testkit.rollouts import docker_gateway
from prime_standin import API_KEY, MANAGED_LABEL, STANDIN_LABEL, BridgeTunnel, StandIn, running
from prime_standin.rollout import API_KEY_VAR, env_config, run_episode

SMOKE = ScriptedPolicy(
    [
        RunShell("echo arena-smoke-ok > smoke.txt && cat smoke.txt"),
        CallTool("note", {"text": "hello over the bridge"}),
        Answer("DONE"),
    ]
)
ROLLOUT_ROUTES = {
    "POST /api/v1/sandbox",
    "POST /api/v1/sandbox/status:batchGet",
    "POST /api/v1/sandbox/{id}/auth",
    "RPC Start",
    "POST /gateway/standin/{id}/upload",
    "GET /gateway/standin/{id}/read-file",
    "DELETE /api/v1/sandbox/{id}",
}
"""What one rollout on verifiers 0.4.0 + prime-sandboxes 0.5.1 calls (measured with this stand-in)."""


@pytest.fixture
def prime_home(tmp_path, monkeypatch) -> Path:
    """A HOME whose ~/.prime/config.json holds the key, as `prime login` writes it: host tool
    servers are started without any *API_KEY* variable, so that file is how they authenticate."""
    (tmp_path / ".prime").mkdir()
    (tmp_path / ".prime" / "config.json").write_text(json.dumps({"api_key": API_KEY}))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(API_KEY_VAR, "arena-local")
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))  # the smoke toolset's host subprocess imports arena_smoke
    return tmp_path


@pytest.fixture
def standin(prime_home, monkeypatch):
    with running() as server:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)
        yield server
    assert not _standin_containers(server), "the stand-in left containers behind"


def _standin_containers(server: StandIn) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={STANDIN_LABEL}={server.boxes.session}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_a_wrong_api_key_is_refused_as_prime_refuses_it(prime_home, monkeypatch):
    from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest
    from prime_sandboxes.core.client import UnauthorizedError

    async def create() -> None:
        async with AsyncSandboxClient(api_key="not-the-key") as client:
            await client.create(CreateSandboxRequest(name="refused", docker_image="arena/base:latest"))

    with running() as server:
        monkeypatch.setenv("PRIME_API_BASE_URL", server.url)
        with pytest.raises(UnauthorizedError):
            asyncio.run(create())
        assert server.boxes.by_id == {}


def test_the_bridge_tunnel_relays_a_remote_connection_to_the_loopback_port():
    async def go() -> bytes:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"echo:" + await reader.readline())
            await writer.drain()
            writer.close()

        upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
        BridgeTunnel.host = "127.0.0.1"
        async with BridgeTunnel().expose(upstream.sockets[0].getsockname()[1]) as url:
            host, port = url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"ping\n")
            data = await reader.read()
            writer.close()
        upstream.close()
        return data

    assert asyncio.run(go()) == b"echo:ping\n"


@pytest.mark.docker
@pytest.mark.parametrize("batch_status", [True, False], ids=["batch", "one-by-one"])
def test_the_sdk_drives_a_box_through_every_route(prime_home, monkeypatch, images, batch_status):
    from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest

    with running(batch_status=batch_status) as server:
        for key, value in server.env.items():
            monkeypatch.setenv(key, value)

        async def go() -> dict:
            client = AsyncSandboxClient()
            box = await client.create(CreateSandboxRequest(name="contract", docker_image=images["base"], labels=["l1"]))
            await client.wait_for_creation(box.id, max_attempts=60)
            seen: dict = {"exec": await client.execute_command(box.id, "echo out; echo err >&2; exit 3")}
            job = await client.start_background_job(
                box.id, "echo $GREETING; exit 4", working_dir="/", env={"GREETING": "bg"}
            )
            while not (status := await client.get_background_job(box.id, job)).completed:
                await asyncio.sleep(0.1)
            seen["job"] = status
            if batch_status:
                seen["batched"] = await client.get_background_job_statuses([job])
            await client.upload_bytes(box.id, "/work/d/blob.bin", bytes(range(256)), filename="blob.bin")
            await client.download_file(box.id, "/work/d/blob.bin", str(prime_home / "blob"))
            seen["blob"] = (prime_home / "blob").read_bytes()
            seen["read"] = await client.read_file(box.id, f"/tmp/job_{job.job_id}.stdout.log")
            live = await client.open_process(box.id, "read line; echo got:$line; sleep 60")
            await live.write_stdin(b"hi\n")
            seen["live"] = await anext(live.stdout)
            await live.terminate()
            seen["live_exit"] = await live.wait()
            seen["containers"] = _standin_containers(server)
            seen["labels"] = subprocess.run(
                ["docker", "inspect", "-f", "{{json .Config.Labels}}", seen["containers"][0]],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            await client.delete(box.id)
            seen["after"] = _standin_containers(server)
            seen["request"] = server.boxes.by_id[box.id].request
            await client.aclose()
            return seen

        seen = asyncio.run(go())
        calls = set(server.boxes.calls)

    assert (seen["exec"].stdout, seen["exec"].stderr, seen["exec"].exit_code) == ("out\n", "err\n", 3)
    assert (seen["job"].stdout, seen["job"].exit_code) == ("bg\n", 4)
    assert seen["blob"] == bytes(range(256)) and seen["read"].content == "bg\n"
    assert seen["live"] == b"got:hi\n" and seen["live_exit"] == 143  # SIGTERM reached the process in the box
    assert seen["request"]["vm"] is True and seen["request"]["labels"] == ["l1"]
    labels = json.loads(seen["labels"])
    assert labels[MANAGED_LABEL.split("=")[0]] == "true" and labels[STANDIN_LABEL] == server.boxes.session
    assert len(seen["containers"]) == 1 and seen["after"] == []
    assert {
        "RPC SendInput",
        "RPC SendSignal",
        "GET /gateway/standin/{id}/download",
        "DELETE /api/v1/sandbox/{id}",
    } <= calls
    if batch_status:
        assert [s.exit_code for s in seen["batched"]] == [4]
        assert "POST /api/v1/sandbox/background-jobs/status:batchGet" in calls
    else:
        assert "GET /api/v1/sandbox/{id}" in calls  # the SDK's fallback when batchGet is missing


@pytest.mark.docker
def test_a_box_whose_tmp_is_a_tmpfs_gets_the_baked_harness_scripts_back(standin, images):
    """A Prime VM's /tmp hides the runner scripts and locks the image baked there; the copy task
    setup makes (arena_kit.box.baked) brings them back, so the harness's env resolves offline."""
    from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest

    from arena_kit.box.baked import restore_command

    async def go() -> tuple[str, str, str]:
        client = AsyncSandboxClient()
        box = await client.create(CreateSandboxRequest(name="tmpfs", docker_image=images["schema-migration"]))
        await client.wait_for_creation(box.id, max_attempts=60)
        before = await client.execute_command(box.id, "ls /tmp/vf-scripts 2>&1 | head -1")
        restored = await client.execute_command(box.id, restore_command("/tmp/vf-scripts") + " && ls /tmp/vf-scripts")
        offline = await client.execute_command(
            box.id,
            "for s in /tmp/vf-scripts/*.py; do UV_OFFLINE=1 uv sync --script $s -q --no-config || exit 1; done; echo synced",
        )
        await client.delete(box.id)
        await client.aclose()
        return before.stdout, restored.stdout, offline.stdout + offline.stderr

    before, restored, offline = asyncio.run(go())
    assert "No such file" in before  # the tmpfs hides the image's /tmp
    assert restored.count(".py.lock") == 2 and restored.count(".py\n") == 2
    assert offline.strip().endswith("synced"), offline


@pytest.mark.docker
def test_a_dropped_live_stream_re_attaches_by_session_and_still_sees_the_exit(standin, images):
    """What the SDK does when a live process's stream drops (`open_process` → `reconnect`): before
    the StartEvent it repeats Start with the same session_uuid, after it it calls Connect."""
    from connectrpc.client import ConnectClient
    from connectrpc.code import Code
    from connectrpc.errors import ConnectError
    from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest
    from prime_sandboxes._connectrpc import GOOGLE_PROTOBUF_BINARY_CODEC
    from prime_sandboxes import rpc_command_session as rpc

    async def events(client: ConnectClient, request, method, token: str, stop_after: int | None = None) -> list:
        seen = []
        async for response in client.execute_server_stream(
            request=request, method=method, timeout_ms=30_000, headers={"Authorization": f"Bearer {token}"}
        ):
            seen.append(rpc.parse_command_session_start_event(response))
            if len(seen) == stop_after:
                break  # the stream drops here, the process keeps running
        return seen

    async def go() -> tuple[list, list, list, str]:
        sdk = AsyncSandboxClient()
        box = await sdk.create(CreateSandboxRequest(name="reattach", docker_image=images["base"]))
        await sdk.wait_for_creation(box.id, max_attempts=60)
        auth = await sdk._auth_cache.get_or_refresh(box.id)
        client = ConnectClient(
            f"{auth['gateway_url']}/{auth['user_ns']}/{auth['job_id']}",
            codec=GOOGLE_PROTOBUF_BINARY_CODEC,
            send_compression=None,
        )
        start = rpc.build_command_session_start_request(
            command="echo one; sleep 1; echo two; exit 5",
            working_dir=None,
            env=None,
            stdin=True,
            session_uuid="6f1c1d0e-0000-4000-8000-000000000001",
        )
        first = await events(client, start, rpc.COMMAND_SESSION_START_RPC_METHOD, auth["token"], stop_after=2)
        connect = rpc.build_command_session_connect_request(session_uuid="6f1c1d0e-0000-4000-8000-000000000001")
        again = await events(client, connect, rpc.COMMAND_SESSION_CONNECT_RPC_METHOD, auth["token"])
        replay = await events(client, start, rpc.COMMAND_SESSION_START_RPC_METHOD, auth["token"])
        try:
            await events(client, connect, rpc.COMMAND_SESSION_CONNECT_RPC_METHOD, "not-a-token")
            refused = "accepted"
        except ConnectError as error:
            refused = error.code.name
        await client.close()
        await sdk.aclose()  # the box is left for the stand-in's shutdown to remove (the fixture checks)
        return first, again, replay, refused

    first, again, replay, refused = asyncio.run(go())
    assert first[0][0] == "start" and first[1] == ("stdout", b"one\n")
    assert again[0] == ("start", first[0][1]) and again[-1] == ("end", 5)  # same process, its exit still seen
    assert replay == [("start", first[0][1]), ("end", 5)]  # a repeated Start attaches; it never runs twice
    assert refused == Code.UNAUTHENTICATED.name
    assert standin.boxes.calls.count("RPC Start") >= 3 and "RPC Connect" in standin.boxes.calls


@pytest.mark.docker
def test_a_smoke_rollout_runs_on_the_prime_runtime_with_its_host_tool_over_the_bridge(standin, images):
    BridgeTunnel.opened.clear()
    bridge = docker_gateway()
    with start_in_thread(policies={"arena/smoke": SMOKE}) as model:
        episode = run_episode(
            env_config({"id": "arena-smoke"}, "bash", images["harness"], bridge), "arena/smoke", model.url, bridge
        )
    [trace] = episode.traces
    assert episode.ok and trace.stop_condition == "agent_completed", (episode.errors, trace.errors)
    assert trace.rewards["wrote_file"].score == 1.0  # the shell ran in the box, the reward read it back
    assert trace.metrics["notes"] == 1.0  # the host MCP tool was reached from the box and its state synced
    assert BridgeTunnel.opened and all(url.startswith(f"http://{bridge}:") for url in BridgeTunnel.opened)
    assert ROLLOUT_ROUTES <= set(standin.boxes.calls)


@pytest.mark.docker
def test_a_schema_migration_oracle_rollout_scores_one_on_the_prime_runtime(standin, images, capsys):
    BridgeTunnel.opened.clear()
    bridge = docker_gateway()
    config = env_config(
        {"id": "schema-migration", "split": "dev", "num_tasks": 1}, "bash", images["schema-migration"], bridge
    )
    with start_in_thread() as model:
        started = time.monotonic()
        episode = run_episode(config, "arena/schema-migration/oracle", model.url, bridge)
        wall = time.monotonic() - started
    [trace] = episode.traces
    assert episode.ok, (episode.errors, trace.errors)
    assert trace.rewards["migration"].score == 1.0, trace.info.get("grade")
    assert trace.metrics["statements_used"] == 2.0
    assert trace.info["grade"]["stage"] == "checked"
    assert BridgeTunnel.opened  # the host-side sqlite_sandbox server was reached from the box over the shim
    assert ROLLOUT_ROUTES | {"PUT /api/v1/sandbox/{id}/egress-policy"} <= set(standin.boxes.calls)
    [box] = standin.boxes.by_id.values()
    assert box.request["vm"] is True and box.egress["allowlist"] == [bridge]  # recorded, not enforced
    with capsys.disabled():
        print(
            f"\nschema-migration oracle on the prime stand-in: {wall:.1f} s wall, calls {Counter(standin.boxes.calls)}"
        )


@pytest.mark.docker
@pytest.mark.slow
def test_the_same_oracle_rollout_scores_one_on_docker_and_on_the_stand_in_timed(standin, images, capsys):
    """The acceptance comparison: one schema-migration oracle rollout per runtime, back to back,
    wall times printed (not asserted: this machine is shared)."""
    bridge = docker_gateway()
    walls: dict[str, float] = {}
    with start_in_thread() as model:
        for runtime in ("docker", "prime"):
            config = env_config(
                {"id": "schema-migration", "split": "dev", "num_tasks": 1},
                "bash",
                images["schema-migration"],
                bridge,
                runtime=runtime,
            )
            started = time.monotonic()
            episode = run_episode(config, "arena/schema-migration/oracle", model.url, bridge)
            walls[runtime] = time.monotonic() - started
            [trace] = episode.traces
            assert episode.ok and trace.rewards["migration"].score == 1.0, (runtime, episode.errors, trace.errors)
    with capsys.disabled():
        print(
            f"\nschema-migration oracle wall time: docker {walls['docker']:.1f} s, prime stand-in {walls['prime']:.1f} s"
        )
