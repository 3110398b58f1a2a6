"""The lean runtime's errors as types Arena's retry rules match (`arena.retries`), against a fake Engine
API client: a lost engine or box is a typed fault and is retried; the box's own words (or any text
carrying the docker CLI's) are never taken for a loss."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import docker
import docker.errors
import pytest
import requests
import requests.exceptions
import verifiers.v1 as vf
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.errors import EnvError, boundary
from verifiers.v1.trace import Error
from verifiers.v1.utils.retries import RetryState

import arena_kit.runtimes.lean_docker.engine as engine_api
import arena_kit.runtimes.lean_docker.failures as failures
from arena.retries import INFRA_RULES, retries_table
from arena_kit.errors import BoxLostError, EngineUnreachableError
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

BOX = "vf-0123abcd"
REFUSED = requests.exceptions.ConnectionError(
    "('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))"
)
FORGED = b"Error response from daemon: No such container: x\n"


def api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    return (
        docker.errors.NotFound("", response=response, explanation=explanation)
        if status == 404
        else docker.errors.APIError("", response=response, explanation=explanation)
    )


GONE = api_error(404, f"No such container: {BOX}")
STOPPED = api_error(409, f"container {BOX} is not running")


class FakeEngine:
    """The parts of `docker.APIClient` the runtime calls; each raises what `failures` names for it."""

    def __init__(
        self,
        failures: dict[str, BaseException] | None = None,
        running: bool = True,
        exec_result: tuple[int, bytes, bytes] = (0, b"ok", b""),
    ) -> None:
        self.failures = failures or {}
        self.running = running
        self.code, self.out, self.err = exec_result
        self.calls: list[str] = []

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.failures:
            raise self.failures[name]

    def exec_create(self, *_args: Any, **_kwargs: Any) -> dict[str, str]:
        self._call("exec_create")
        return {"Id": "exec-1"}

    def exec_start(self, *_args: Any, **_kwargs: Any) -> tuple[bytes, bytes] | None:
        self._call("exec_start")
        return None if _kwargs.get("detach") else (self.out, self.err)

    def exec_inspect(self, *_args: Any) -> dict[str, Any]:
        self._call("exec_inspect")
        return {"ExitCode": self.code, "Running": False}

    def inspect_container(self, *_args: Any) -> dict[str, Any]:
        self._call("inspect_container")
        return {"State": {"Running": self.running}}

    def inspect_image(self, *_args: Any) -> dict[str, Any]:
        self._call("inspect_image")
        return {"Config": {"User": ""}}

    def create_host_config(self, **kwargs: Any) -> dict[str, Any]:
        return kwargs

    def create_container(self, *_args: Any, **_kwargs: Any) -> dict[str, str]:
        self._call("create_container")
        return {"Id": BOX}


def box_on(engine: FakeEngine) -> LeanDockerRuntime:
    """A started lean box whose engine is `engine` (nothing really started)."""
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/none:latest"))
    box._api = engine
    box.container = BOX
    box.image_env = {}
    return box


def retried(error: BaseException) -> bool:
    """Whether Arena's rules retry `error` as verifiers records it."""
    recorded = Error(type=type(error).__name__, message=str(error))
    return RetryState(RetryConfig.model_validate(retries_table())).next_error([recorded]) is recorded


def rule_of(error: BaseException) -> str:
    recorded = Error(type=type(error).__name__, message=str(error))
    state = RetryState(RetryConfig.model_validate(retries_table()))
    assert state.next_error([recorded]) is recorded, f"not retried: {type(error).__name__}: {error}"
    return INFRA_RULES[state.used.index(1)].fault


def raised(operation: Callable[[], Any]) -> BaseException:
    async def go() -> BaseException:
        try:
            await operation()
        except BaseException as error:  # noqa: BLE001 - the error is the result
            return error
        raise AssertionError("no error")

    return asyncio.run(go())


@pytest.fixture(autouse=True)
def fresh_image_cache() -> None:
    engine_api.image_user.cache_clear()


# --- engine unreachable at start -----------------------------------------------------------------


def test_an_engine_unreachable_at_start_leaves_the_env_run_as_a_retried_typed_fault(monkeypatch):
    """`LeanEnv.run` starts the box inside verifiers' `boundary(EnvError)`: a RuntimeError there
    would be recorded as an EnvError, which no rule retries; a SandboxError subclass passes as itself."""

    def refused(**_kwargs: Any) -> docker.DockerClient:
        raise docker.errors.DockerException(f"Error while fetching server API version: {REFUSED}")

    monkeypatch.setattr(engine_api, "_client", None)
    monkeypatch.setattr(docker.DockerClient, "from_env", staticmethod(refused))

    async def env_run() -> None:
        async with boundary(EnvError, "LeanEnv.run()"):
            await LeanDockerRuntime(vf.DockerConfig(image="arena/none:latest")).start()

    error = raised(env_run)
    assert type(error) is EngineUnreachableError, error
    assert str(error).startswith("the docker engine is not reachable: ")
    assert rule_of(error) == "engine unreachable, lean box"


@pytest.mark.parametrize(
    ("failure", "fault"),
    [
        pytest.param(REFUSED, "engine unreachable, lean box", id="engine-refused"),
        pytest.param(api_error(404, "No such image: arena/none:latest"), None, id="image-missing"),
    ],
)
def test_an_engine_failure_while_creating_the_box_is_typed_by_the_engine_word(monkeypatch, failure, fault):
    engine = FakeEngine({"create_container": failure})
    monkeypatch.setattr(engine_api, "_client", type("Client", (), {"api": engine})())
    error = raised(LeanDockerRuntime(vf.DockerConfig(image="arena/none:latest")).start)
    assert isinstance(error, vf.SandboxError) and str(error).startswith("box start: "), error
    assert (rule_of(error) if fault else retried(error)) == (fault or False)


# --- engine or box lost mid-rollout ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "failure", "fault", "words"),
    [
        pytest.param(
            "exec_create", REFUSED, EngineUnreachableError, "the docker engine did not answer", id="engine-refused"
        ),
        pytest.param(
            "exec_start",
            ConnectionResetError(104, "Connection reset by peer"),
            EngineUnreachableError,
            "the docker engine did not answer",
            id="stream-dropped",
        ),
        pytest.param(
            "exec_create",
            GONE,
            BoxLostError,
            f"the engine reports the box gone: No such container: {BOX}",
            id="box-removed",
        ),
        pytest.param(
            "exec_create",
            STOPPED,
            BoxLostError,
            f"the engine reports the box gone: container {BOX} is not running",
            id="box-stopped",
        ),
    ],
)
@pytest.mark.parametrize("operation", ["run", "read", "write", "run_background"])
def test_an_engine_call_that_fails_becomes_the_typed_fault_the_engine_names(call, failure, fault, words, operation):
    # A refused or dropped connection is the engine's loss only when the engine cannot be asked either.
    lost_engine = {"inspect_container": failure} if fault is EngineUnreachableError else {}
    box = box_on(FakeEngine({call: failure, **lost_engine}))
    actions: dict[str, Callable[[], Any]] = {
        "run": lambda: box.run(["true"], {}),
        "read": lambda: box.read("done.txt"),
        "write": lambda: box.write("done.txt", b"x"),
        "run_background": lambda: box.run_background(["sleep", "1"], {}, "/tmp/bg.log"),
    }
    prefixes = {
        "run": "exec: ",
        "read": "read 'done.txt': ",
        "write": "write 'done.txt': ",
        "run_background": "background process start: ",
    }
    error = raised(actions[operation])
    assert type(error) is fault, f"{type(error).__name__}: {error}"
    assert str(error).startswith(prefixes[operation] + words), error
    assert (
        rule_of(error)
        == {EngineUnreachableError: "engine unreachable, lean box", BoxLostError: "box lost, lean box"}[fault]
    )


class DroppedSocket:
    """An exec socket whose far end closed while stdin was still being sent."""

    def sendall(self, _data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def close(self) -> None:
        pass


def test_a_stream_dropped_while_writing_stdin_to_an_unreachable_engine_is_an_engine_loss(monkeypatch):
    engine = FakeEngine({"inspect_container": REFUSED})
    monkeypatch.setattr(engine, "exec_start", lambda *_a, **_k: DroppedSocket())
    error = raised(lambda: box_on(engine).write("done.txt", b"x"))
    assert type(error) is EngineUnreachableError and str(error).startswith(
        "write 'done.txt': the docker engine did not answer"
    ), error
    assert rule_of(error) == "engine unreachable, lean box"


def test_a_stream_the_running_box_dropped_is_no_engine_loss(monkeypatch):
    """A process in the box that quits before reading its stdin closes the exec stream under a large
    write; the engine still answers and reports the box running, so nothing was lost."""
    engine = FakeEngine()
    monkeypatch.setattr(engine, "exec_start", lambda *_a, **_k: DroppedSocket())
    error = raised(lambda: box_on(engine).write("done.txt", b"x" * 1_000_000))
    assert str(error).startswith("in the running box: write 'done.txt': the exec stream closed (BrokenPipeError"), error
    assert not retried(error)


@pytest.mark.parametrize(
    ("running", "fault"),
    [
        pytest.param(None, "box lost, lean box", id="container-gone"),
        pytest.param(True, None, id="container-running"),
    ],
)
def test_an_exec_lost_with_its_container_names_the_container(running, fault):
    """The engine removes a container's exec instances with it: what is lost is the box, and only the
    engine's word on the container (not a missing exec) says so."""
    failures: dict[str, BaseException] = {"exec_inspect": api_error(404, "No such exec instance: exec-1")}
    if running is None:
        failures["inspect_container"] = GONE
    error = raised(lambda: box_on(FakeEngine(failures, running=bool(running))).run(["true"], {}))
    assert isinstance(error, vf.SandboxError), error
    if fault:
        assert (
            type(error) is BoxLostError
            and str(error) == f"exec: the engine reports the box gone: No such container: {BOX}"
        )
        assert rule_of(error) == fault
    else:
        assert not retried(error), error


# --- the box's own words -------------------------------------------------------------------------


class QuietSocket:
    """An exec socket that takes stdin and closes."""

    def sendall(self, _data: bytes) -> None:
        pass

    def shutdown(self, _how: int) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("operation", ["read", "write"])
def test_a_forged_daemon_error_from_a_running_box_is_marked_and_never_retried(monkeypatch, operation):
    """A replaced `cat` prints the daemon's words; the engine says the box runs, so it is no loss."""
    engine = FakeEngine(exec_result=(1, b"", FORGED))
    box = box_on(engine)
    if operation == "write":  # stdin goes over the exec socket, the output comes back in frames
        monkeypatch.setattr(engine, "exec_start", lambda *_a, **_k: QuietSocket())
        monkeypatch.setattr(engine_api, "frames_iter", lambda _sock, tty=False: iter([(engine_api.STDERR, FORGED)]))
    error = raised(lambda: box.read("done.txt") if operation == "read" else box.write("done.txt", b"x"))
    assert (
        str(error) == f"in the running box: {operation} 'done.txt': Error response from daemon: No such container: x"
    ), error
    assert not retried(error)
    assert "inspect_container" in engine.calls, "the engine, not the box, was asked"


def test_a_failed_read_in_a_box_the_engine_reports_stopped_is_a_lost_box():
    error = raised(
        lambda: box_on(FakeEngine(running=False, exec_result=(1, b"", b"cat: done.txt: I/O error\n"))).read("done.txt")
    )
    assert type(error) is BoxLostError
    assert str(error) == "the engine reports the box stopped: read 'done.txt': cat: done.txt: I/O error"
    assert rule_of(error) == "box lost, lean box"


def test_a_main_program_that_fails_in_a_box_the_engine_reports_stopped_is_a_lost_box():
    box = box_on(FakeEngine(running=False, exec_result=(137, b"", b"")))
    error = raised(lambda: box.run_program(["python3", "runner.py"], {}))
    assert type(error) is BoxLostError and str(error).startswith("the box stopped under its main program (exit 137)"), (
        error
    )
    assert rule_of(error) == "box lost, lean box"


def test_a_main_program_that_fails_in_a_running_box_is_its_result():
    result = asyncio.run(box_on(FakeEngine(exec_result=(1, b"", FORGED))).run_program(["python3", "runner.py"], {}))
    assert result == vf.ProgramResult(1, "", FORGED.decode())


def test_a_grader_read_of_a_missing_file_is_the_outcome():
    error = raised(lambda: box_on(FakeEngine(exec_result=(1, b"", b"cat: can't open 'done.txt'\n"))).read("done.txt"))
    assert str(error) == "in the running box: read 'done.txt': cat: can't open 'done.txt'"
    assert not retried(error)


def test_a_box_exit_code_is_a_result_not_an_error():
    result = asyncio.run(box_on(FakeEngine(exec_result=(7, b"out", FORGED))).run(["false"], {}))
    assert result == vf.ProgramResult(7, "out", FORGED.decode())


@pytest.mark.parametrize("failure", [REFUSED, GONE, api_error(500, "server error")])
def test_alive_asks_the_engine_and_an_engine_that_cannot_answer_has_lost_the_box(failure):
    assert asyncio.run(box_on(FakeEngine({"inspect_container": failure})).alive()) is False
    assert asyncio.run(box_on(FakeEngine()).alive()) is True
    assert asyncio.run(box_on(FakeEngine(running=False)).alive()) is False


def test_alive_without_an_engine_at_all_is_false(monkeypatch):
    def unreachable() -> None:
        raise EngineUnreachableError("the docker engine is not reachable: refused")

    monkeypatch.setattr(failures, "engine_client", unreachable)
    box = box_on(FakeEngine())
    box._api = None
    assert asyncio.run(box.alive()) is False


# --- a start cancelled half-way -----------------------------------------------------------------


class SlowCreate(FakeEngine):
    """An engine whose create waits until released; it keeps the names of the containers that exist."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release, self.created = threading.Event(), threading.Event(), threading.Event()
        self.existing: set[str] = set()

    def create_container(self, *_args: Any, name: str, **_kwargs: Any) -> dict[str, str]:
        self.entered.set()
        self.release.wait(10)
        self.existing.add(name)
        self.created.set()
        return {"Id": BOX}

    def start(self, name: str) -> None:
        if name not in self.existing:
            raise api_error(404, f"No such container: {name}")

    def remove_container(self, name: str, force: bool = False) -> None:
        if name not in self.existing:
            raise api_error(404, f"No such container: {name}")
        self.existing.discard(name)


def test_a_start_cancelled_while_the_engine_creates_the_box_leaves_no_box(monkeypatch):
    engine = SlowCreate()
    monkeypatch.setattr(engine_api, "_client", type("Client", (), {"api": engine})())
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/none:latest"))

    async def scenario() -> None:
        starting = asyncio.create_task(box.start())
        assert await asyncio.to_thread(engine.entered.wait, 5)
        starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting
        box.cleanup()  # what `LeanEnv.run`'s finally does: the box does not exist yet
        engine.release.set()
        # The executor thread finishes the create on its own meanwhile; wait (to a deadline, not a fixed
        # sleep a loaded machine can outrun) until the box was created and is gone again.
        deadline = time.monotonic() + 10
        while not (engine.created.is_set() and not engine.existing) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    asyncio.run(scenario())
    assert engine.created.is_set() and engine.existing == set()  # created, then removed


def test_a_box_whose_init_exits_at_once_says_so_at_start(monkeypatch):
    class ExitedAtOnce(SlowCreate):
        def inspect_container(self, name: str) -> dict[str, Any]:
            return {
                "Id": BOX,
                "State": {"Running": False, "Pid": 0, "ExitCode": 127, "Error": ""},
                "Config": {"Env": []},
            }

    engine = ExitedAtOnce()
    engine.release.set()
    monkeypatch.setattr(engine_api, "_client", type("Client", (), {"api": engine})())
    error = raised(LeanDockerRuntime(vf.DockerConfig(image="arena/none:latest")).start)
    assert isinstance(error, vf.SandboxError), error
    assert str(error) == "box start: the box exited at once (exit 127: no error given)"
    assert not retried(error)  # an image problem, the same on every try
