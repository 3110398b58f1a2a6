"""`arena reap` removes what a SIGKILLed eval left behind, and nothing that is not Arena's."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from arena.evalrun import EvalRequest, launch_eval
from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, RunShell
from arena.reaper import leftovers
from arena.server import start_in_thread
from arena_testkit import SUPPORT

pytestmark = pytest.mark.docker
DEADLINE_S = 120


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def _arena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=120)


def test_reap_after_sigkill_removes_our_containers_and_spares_others(images, tmp_path):
    run = f"reap-test-{uuid.uuid4().hex[:8]}"
    other = subprocess.run(
        ["docker", "run", "-d", "--label", "arena.managed=false", images["base"], "sleep", "300"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    policy = ScriptedPolicy([RunShell("sleep 300"), Answer("never reached")])
    try:
        with start_in_thread(policies={"arena/sleeper": policy}) as server:
            request = EvalRequest(
                taskset="arena-smoke",
                harness="bash",
                model="arena/sleeper",
                image=images["harness"],
                base_url=server.url,
                run_name=run,
                output_dir=tmp_path,
                env={"PYTHONPATH": str(SUPPORT)},
            )
            proc = launch_eval(request)
            try:
                _wait_for(lambda: leftovers(run), "the eval's container to start")
            finally:
                os.killpg(proc.pid, signal.SIGKILL)  # no cleanup code of vf-eval runs
                proc.wait()
        assert leftovers(run), "SIGKILL should leave the rollout's container behind"

        result = _arena("reap", "--run", run)
        assert result.returncode == 0, result.stderr
        assert leftovers(run) == []
        state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", other], capture_output=True, text=True)
        assert state.stdout.strip() == "true"
    finally:
        subprocess.run(["docker", "rm", "-f", other], capture_output=True)


def test_reap_without_a_scope_is_a_usage_error():
    result = _arena("reap")
    assert result.returncode == 2
    assert "--run ID" in result.stderr and "--all" in result.stderr


def test_a_container_removed_while_the_reaper_lists_is_skipped_not_an_error(images, monkeypatch):
    """The engine lists a container, then it is gone before its inspect (its removal was under way when
    the run was killed): `arena reap` failed with NotFound."""
    import docker.errors

    from arena import engine

    run = f"reap-race-{uuid.uuid4().hex[:8]}"
    kept = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--label",
            "arena.managed=true",
            "--label",
            f"verifiers.run={run}",
            images["base"],
            "sleep",
            "300",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    gone = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--label",
            "arena.managed=true",
            "--label",
            f"verifiers.run={run}",
            images["base"],
            "sleep",
            "300",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    client = engine.docker_client()
    inspect = client.api.inspect_container

    def racing_inspect(container, *args, **kwargs):
        if container.startswith(gone[:12]):
            subprocess.run(["docker", "rm", "-f", gone], capture_output=True, check=True)
        return inspect(container, *args, **kwargs)

    monkeypatch.setattr(client.api, "inspect_container", racing_inspect)
    monkeypatch.setattr(engine, "docker_client", lambda: client)
    try:
        names = leftovers(run)
        assert len(names) == 1 and names[0] == client.containers.get(kept).name
    finally:
        subprocess.run(["docker", "rm", "-f", kept, gone], capture_output=True)
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(gone)
