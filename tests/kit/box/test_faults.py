"""The rule that tells an agent's fault in its own box from the host's (`arena_kit.box.faults`), on
evidence as the engine and the kernel give it, and the retry table never re-rolling one."""

from pathlib import Path

import pytest
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.errors import stop_condition
from verifiers.v1.trace import Error
from verifiers.v1.utils.retries import RetryState

from arena.retries import retries_table
from arena.traces import AGENT_STOPS
from arena_kit.box import faults as box_faults
from arena_kit.box.faults import BoxEvidence, agent_fault, host_oom_kills, killed_by
from arena_kit.errors import AgentKilledBoxError, BoxOomError

RUNNING = BoxEvidence(running=True, oom_kills=0)


@pytest.mark.parametrize(
    ("code", "name"), [(137, "SIGKILL"), (143, "SIGTERM"), (-9, "SIGKILL"), (130, "SIGINT"), (129, "SIGHUP")]
)
def test_a_kill_signal_is_read_off_the_exit_code_either_way_it_is_written(code, name):
    sent = killed_by(code)
    assert sent is not None and sent.name == name


@pytest.mark.parametrize("code", [None, 0, 1, 2, 97, 127, 128, 139, 134, -11, 255])
def test_a_crash_or_an_ordinary_exit_is_no_kill(code):
    assert killed_by(code) is None  # 139 SIGSEGV, 134 SIGABRT: the harness's own crash


def test_a_runner_killed_in_a_running_box_without_an_oom_is_the_agent_killing_it():
    assert isinstance(agent_fault(RUNNING, 137, "x"), AgentKilledBoxError)
    assert isinstance(agent_fault(BoxEvidence(running=True, oom_kills=None), 137, "x"), AgentKilledBoxError)


def test_an_oom_kill_in_the_box_makes_the_harness_death_a_box_oom():
    assert isinstance(agent_fault(BoxEvidence(running=True, oom_kills=2), 137, "x"), BoxOomError)
    assert isinstance(
        agent_fault(BoxEvidence(running=True, oom_kills=1), None, "x"), BoxOomError
    )  # an ACP runner: no code
    assert isinstance(agent_fault(BoxEvidence(running=False, oom_killed=True), 137, "x"), BoxOomError)


def test_a_stopped_box_without_the_engines_oom_word_stays_the_hosts_fault():
    assert agent_fault(BoxEvidence(running=False), 137, "x") is None  # BoxLostError / "runtime died", retried


def test_a_harness_that_failed_on_its_own_stays_a_harness_error():
    assert agent_fault(RUNNING, 1, "Traceback ...") is None
    assert agent_fault(RUNNING, None, "ACP connection closed") is None
    assert agent_fault(RUNNING, 139, "segfault") is None


def test_each_agent_fault_has_its_own_stop_condition_in_the_reports_and_no_retry_rule():
    table = RetryState(RetryConfig.model_validate(retries_table()))
    for fault in (BoxOomError("m"), AgentKilledBoxError("m")):
        assert stop_condition(fault) in AGENT_STOPS
        # even a message that reads like a lost box buys nothing: rules match the class name exactly
        error = Error(
            type=type(fault).__name__, message="runtime died under harness 'bash' (exit 137): No such container"
        )
        assert table.next_error([error]) is None


def _fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: str, files: dict[str, str]) -> None:
    (tmp_path / "proc" / "42").mkdir(parents=True)
    (tmp_path / "proc" / "42" / "cgroup").write_text(cgroup)
    for name, text in files.items():
        path = tmp_path / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setattr(box_faults, "PROC", tmp_path / "proc")
    monkeypatch.setattr(box_faults, "CGROUP_ROOT", tmp_path / "cgroup")


def test_the_oom_count_is_read_from_the_boxs_cgroup_v1_on_the_host(tmp_path, monkeypatch):
    _fake_host(
        tmp_path,
        monkeypatch,
        "5:devices:/docker/abc\n4:memory:/docker/abc\n0::/docker/abc\n",
        {"memory/docker/abc/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"},
    )
    assert host_oom_kills(42, "abc") == 3


def test_the_oom_count_is_read_from_the_boxs_cgroup_v2_on_the_host(tmp_path, monkeypatch):
    _fake_host(
        tmp_path,
        monkeypatch,
        "0::/system.slice/docker-abc.scope\n",
        {"system.slice/docker-abc.scope/memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"},
    )
    assert host_oom_kills(42, "abc") == 1


def test_a_pid_that_is_not_the_boxs_gives_no_count(tmp_path, monkeypatch):
    # another PID namespace (a remote engine): the PID names some other process's cgroup
    _fake_host(
        tmp_path, monkeypatch, "4:memory:/user.slice\n", {"memory/user.slice/memory.oom_control": "oom_kill 9\n"}
    )
    assert host_oom_kills(42, "abc") is None
    assert host_oom_kills(7, "abc") is None  # no such process here


def test_a_live_harness_that_died_in_the_agents_tool_call_is_the_agents_fault():
    # an ACP runner: no exit code reaches the failure, the host's trace says a tool call was running
    assert isinstance(agent_fault(RUNNING, None, "ACP connection closed", tool_pending=True), AgentKilledBoxError)
    assert agent_fault(RUNNING, 1, "Traceback", tool_pending=True) is None  # a known ordinary exit decides
    assert agent_fault(BoxEvidence(running=False), None, "x", tool_pending=True) is None  # the host's: retried
