"""Re-attaching to the rollout's box on any runtime: the recorded runtime info, the prime adapter, refusals.

The prime cases drive verifiers' real `PrimeRuntime` code through a LABELLED FAKE of the
prime-sandboxes client (`HostSandboxClient`): it runs each job's command with the host's `sh` and
keeps uploads on the host disk, so the engine really runs, but no Prime API is involved.
"""

import asyncio
import contextlib
import inspect
import json
import os
import signal
import sqlite3
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError
from sqlite_sandbox import boxes, engine, prime_box, runner
from sqlite_sandbox.state import DEFAULT_CHECKPOINT_DIR, DEFAULT_DB_PATH, SandboxConfig, SandboxState
from sqlite_sandbox.toolset import SqliteSandboxToolset
from verifiers.v1.mcp.server import _call_state
from verifiers.v1.runtimes import (
    ApptainerRuntimeInfo,
    DockerRuntimeInfo,
    E2BRuntimeInfo,
    ModalRuntimeInfo,
    PodmanRuntimeInfo,
    PrimeRuntime,
    PrimeRuntimeInfo,
    SubprocessRuntimeInfo,
)


class HostSandboxClient:
    """FAKE prime-sandboxes AsyncSandboxClient: jobs run in the host's `sh`, uploads land on the host."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def start_background_job(self, sandbox_id, command, working_dir=None, env=None, user=None):
        self.calls.append(("start_background_job", sandbox_id))
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True
        )
        try:
            out, err = await proc.communicate()
        except BaseException:  # the toolset gave up on the box (its deadline): the job dies with the call
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.communicate()
            raise
        return SimpleNamespace(result=(proc.returncode, out.decode(), err.decode()))

    async def get_background_job(self, sandbox_id, job, timeout=None):
        code, out, err = job.result
        return SimpleNamespace(
            completed=True, exit_code=code, stdout=out, stderr=err, stdout_error=None, stderr_error=None
        )

    async def upload_bytes(self, sandbox_id, path, data, filename=None):
        self.calls.append(("upload_bytes", sandbox_id))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)

    async def delete(self, sandbox_id):
        self.calls.append(("delete", sandbox_id))


class Runtime:
    def __init__(self, info) -> None:
        self.info = info
        self.files: dict[str, bytes] = {}

    async def write(self, path: str, data: bytes) -> None:
        self.files[path] = data


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A HOME without Prime credentials, and no $PRIME_API_KEY."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PRIME_API_KEY", raising=False)
    return tmp_path / "home"


def _login(home: Path) -> None:
    (home / ".prime").mkdir(parents=True)
    (home / ".prime" / "config.json").write_text(json.dumps({"api_key": "test-not-a-real-key"}))


@pytest.fixture
def fake_prime(home, monkeypatch) -> HostSandboxClient:
    _login(home)
    client = HostSandboxClient()
    monkeypatch.setattr(prime_box, "_new_client", lambda: client)
    return client


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (
            SubprocessRuntimeInfo(id="/home/u/.cache/verifiers/runtimes/subprocess/vf-1"),
            "cannot serve the subprocess runtime",
        ),
        (ApptainerRuntimeInfo(id="instance-1"), "cannot serve the apptainer runtime"),
        (ModalRuntimeInfo(id="sb-1"), "cannot serve the modal runtime"),
        (E2BRuntimeInfo(id="e2b-1"), "cannot serve the e2b runtime"),
        (DockerRuntimeInfo(id=None), "reported no box id"),
    ],
    ids=["subprocess", "apptainer", "modal", "e2b", "docker-without-id"],
)
def test_setup_refuses_a_runtime_the_tools_cannot_reach_in_words(info, words):
    with pytest.raises(vf.TaskError, match=words):
        boxes.box_info(Runtime(info))


def test_prime_is_refused_at_setup_when_the_tool_server_would_have_no_credentials(home, monkeypatch):
    # The env process has the key in its environment; the host tool server never gets it.
    monkeypatch.setenv("PRIME_API_KEY", "test-not-a-real-key")
    with pytest.raises(vf.TaskError, match="prime login"):
        boxes.box_info(Runtime(PrimeRuntimeInfo(id="sbx-1")))
    _login(home)
    assert boxes.box_info(Runtime(PrimeRuntimeInfo(id="sbx-1"))) == PrimeRuntimeInfo(id="sbx-1")


def test_prime_is_refused_at_setup_on_a_verifiers_the_adapter_was_not_written_for(home, monkeypatch):
    """Not later, as every tool call saying "the sandbox is gone" while the episode ends ok."""
    _login(home)
    monkeypatch.setattr(prime_box, "version", lambda _dist: "0.5.0")
    with pytest.raises(vf.TaskError, match="supports verifiers==0.4.0, found 0.5.0"):
        boxes.box_info(Runtime(PrimeRuntimeInfo(id="sbx-1")))


@pytest.mark.parametrize(
    "info",
    [
        DockerRuntimeInfo(id="abc123def456", image="arena/schema-migration:latest", workdir="/app"),
        PodmanRuntimeInfo(id="p1"),
        PrimeRuntimeInfo(id="sbx-1", image="ghcr.io/x/y@sha256:00"),
    ],
    ids=["docker", "podman", "prime"],
)
def test_the_recorded_box_survives_the_state_channel_as_its_own_runtime_info(info, fake_prime):
    recorded = boxes.box_info(Runtime(info))
    wire = json.loads(json.dumps(SandboxState(box=recorded).model_dump(mode="json")))
    back = SandboxState.model_validate(wire).box
    assert type(back) is type(info) and back == info


def _database(tmp_path: Path) -> str:
    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(1, 4)])
    conn.commit()
    conn.close()
    return str(path)


def _call(tools: SqliteSandboxToolset, state: SandboxState, tool: str, **arguments):
    async def run():
        token = _call_state.set(state)
        try:
            return await getattr(tools, tool)(**arguments)
        finally:
            _call_state.reset(token)

    return asyncio.run(run())


def test_a_prime_box_in_state_runs_the_engine_through_verifiers_prime_runtime(fake_prime, tmp_path):
    state = SandboxState(
        box=PrimeRuntimeInfo(id="sbx-1"), db_path=_database(tmp_path), checkpoint_dir=str(tmp_path / "ck")
    )
    tools = SqliteSandboxToolset(SandboxConfig())
    text = _call(tools, state, "execute", sql="INSERT INTO t VALUES (9, 'x'); SELECT count(*) FROM t")
    assert "[4]" in text and state.statements_used == 1
    assert fake_prime.calls == [("start_background_job", "sbx-1")]


def test_a_request_too_big_for_one_argument_is_spooled_to_a_file_and_removed(fake_prime, tmp_path):
    # Prime quotes the command twice (a `'` becomes 25 bytes) and Linux caps one argument at 128 KiB.
    state = SandboxState(
        box=PrimeRuntimeInfo(id="sbx-1"), db_path=_database(tmp_path), checkpoint_dir=str(tmp_path / "ck")
    )
    value = "it's " * 12_000
    text = _call(
        SqliteSandboxToolset(SandboxConfig()),
        state,
        "execute",
        sql=f"INSERT INTO t VALUES (10, '{value.replace(chr(39), chr(39) * 2)}'); SELECT length(v) FROM t WHERE id = 10",
    )
    assert f"[{len(value)}]" in text
    assert [name for name, _ in fake_prime.calls] == ["upload_bytes", "start_background_job"]
    assert list((tmp_path / "ck").iterdir()) == []


def test_a_borrowed_prime_sandbox_is_never_started_stopped_or_deleted(fake_prime):
    async def borrow_and_let_go():
        runtime = prime_box.borrow(PrimeRuntimeInfo(id="sbx-1"))
        assert isinstance(runtime, PrimeRuntime) and runtime.info.borrowed
        with pytest.raises(vf.SandboxError, match="never started"):
            await runtime.start()
        await runtime.stop()
        runtime.cleanup()
        assert (await runtime.run(["echo", "still here"], {})).stdout == "still here\n"

    asyncio.run(borrow_and_let_go())
    assert ("delete", "sbx-1") not in fake_prime.calls


def test_the_prime_adapter_fails_loudly_if_verifiers_changes_what_it_relies_on():
    assert version("verifiers") == prime_box.VERIFIERS_VERSION, (
        "re-check BorrowedPrimeRuntime, then bump VERIFIERS_VERSION"
    )
    # run/read/write reach the sandbox through `self._client`, the one attribute the adapter sets ...
    for method in (PrimeRuntime.run, PrimeRuntime._read, PrimeRuntime.write):
        assert "self._client." in inspect.getsource(method), method.__name__
    # ... and only teardown/cleanup delete the sandbox, the two methods the adapter disarms.
    deleting = {
        name for name, fn in inspect.getmembers(PrimeRuntime, inspect.isfunction) if ".delete(" in inspect.getsource(fn)
    }
    assert deleting == {"teardown", "cleanup"}
    assert {"teardown", "cleanup", "start"} <= set(vars(prime_box.BorrowedPrimeRuntime))


def test_without_credentials_a_tool_call_gets_an_agent_safe_error_and_the_host_log_says_why(home, tmp_path, caplog):
    state = SandboxState(box=PrimeRuntimeInfo(id="sbx-1"), db_path=_database(tmp_path))
    with pytest.raises(ToolError) as raised:
        _call(SqliteSandboxToolset(SandboxConfig()), state, "execute", sql="SELECT 1")
    assert str(raised.value) == runner.GONE
    assert state.statements_used == 0
    assert "prime login" in caplog.text and "sbx-1" in caplog.text


def test_one_handle_per_box_is_kept_and_let_go_once_idle(fake_prime):
    now = [0.0]
    held = boxes.Boxes(idle_s=10, clock=lambda: now[0])
    one, two = PrimeRuntimeInfo(id="sbx-1"), PrimeRuntimeInfo(id="sbx-2")

    async def calls():
        first = await held.runtime(one)
        now[0] = 5
        assert await held.runtime(one) is first
        now[0] = 20
        await held.runtime(two)
        assert len(held) == 1  # sbx-1 was idle for 15 s
        assert await held.runtime(one) is not first
        await held.drop(one)
        assert len(held) == 1

    asyncio.run(calls())


def test_nothing_the_engine_needs_lives_under_tmp():
    # Prime VMs mount /tmp as a small tmpfs; the database, checkpoints and spooled requests stay off it.
    state = SandboxState()
    for path in (DEFAULT_DB_PATH, DEFAULT_CHECKPOINT_DIR, state.db_path, state.checkpoint_dir):
        assert not os.path.normpath(path).startswith("/tmp"), path
    assert runner.engine_argv("{}", 5)[:8] == ["timeout", "-k", "2", "5", "python3", "-I", "-S", "-c"]


def test_the_engine_reads_a_spooled_request_once_and_removes_the_file(tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"op": "schema", "db": "x"}))
    assert engine.load_request(f"@{path}") == {"op": "schema", "db": "x"}
    assert not path.exists()
    assert engine.load_request('{"op": "schema"}') == {"op": "schema"}


def test_a_sandbox_that_died_gives_an_agent_safe_error_and_its_handle_is_let_go(fake_prime, tmp_path, caplog):
    async def gone(*args, **kwargs):
        raise RuntimeError("404 sandbox sbx-1 not found at https://internal.example/api")

    fake_prime.start_background_job = gone
    tools = SqliteSandboxToolset(SandboxConfig())
    state = SandboxState(box=PrimeRuntimeInfo(id="sbx-1"), db_path=_database(tmp_path))
    with pytest.raises(ToolError) as raised:
        _call(tools, state, "execute", sql="SELECT 1")
    assert str(raised.value) == runner.NOT_RUNNING and "internal.example" not in str(raised.value)
    assert "internal.example" in caplog.text
    assert state.statements_used == 0 and len(tools._boxes) == 0


@pytest.mark.parametrize(
    "answer",
    ["exit 124", "exit 137", "echo not-json", "sleep 30"],
    ids=["timed-out", "killed", "not-the-engine", "never-answers"],
)
@pytest.mark.slow
def test_an_execute_that_reached_the_box_costs_a_statement_whatever_the_box_answers(
    fake_prime, tmp_path, monkeypatch, answer
):
    """The box is the agent's: a shadowed `timeout` or `python3` can run the real engine and then
    answer with a timeout code, junk or silence. None of that may make the call free."""
    monkeypatch.setattr(runner, "engine_argv", lambda _payload, _timeout: ["sh", "-c", answer])
    monkeypatch.setattr(runner, "HOST_GRACE_S", 0.5)
    state = SandboxState(
        box=PrimeRuntimeInfo(id="sbx-1"), db_path=_database(tmp_path), checkpoint_dir=str(tmp_path / "ck")
    )
    tools = SqliteSandboxToolset(SandboxConfig(exec_timeout_s=5))
    with pytest.raises(ToolError, match=r"statement"):
        _call(tools, state, "execute", sql="SELECT 1")
    assert state.statements_used == 1
