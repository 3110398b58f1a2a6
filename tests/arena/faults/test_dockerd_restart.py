"""dockerd SIGKILLed mid-eval and restarted as `images/ensure-docker.sh` does: the rollouts the
outage broke (engine unreachable, boxes killed by the restart) are retried as whole episodes, every
episode ends scored, and after Arena's cleanup no container of the run is left, on both docker paths
(the lean one's engine errors carry the stock runtime's words, `arena_kit.runtimes.lean_docker.runtime`).

This kills the machine's Docker engine, and with it every other container: it is marked
`engine_fault`, which the Makefile runs alone after the parallel suite. Run it by hand only on a
quiet machine: `.venv/bin/pytest -p no:xdist -m engine_fault tests/arena/faults/test_dockerd_restart.py`
(each docker path restarts the engine once; `-k lean` for one).
"""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from arena_testkit.fault_runs import (
    MODEL,
    TASKSETS,
    CountingPolicy,
    containers_of,
    docker_paths,
    eval_during_fault,
    fault_request,
    finished_lines,
    wait_for,
)

from arena.server import start_in_thread

pytestmark = [pytest.mark.docker, pytest.mark.engine_fault]
TASKS = 6
DOWN_S = 3.0
ENSURE_DOCKER = Path(__file__).resolve().parents[3] / "images" / "ensure-docker.sh"
DOCKERD_PID = Path("/var/run/docker.pid")


def _kill_dockerd() -> int:
    pid = int(DOCKERD_PID.read_text().strip())
    assert Path(f"/proc/{pid}/comm").read_text().strip() == "dockerd", f"{DOCKERD_PID} names no dockerd"
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.parametrize("path", list(TASKSETS))
def test_an_eval_survives_a_docker_daemon_restart(images, tmp_path, path):
    policy = CountingPolicy()
    run = f"fault-engine-{uuid.uuid4().hex[:8]}"
    fault: dict[str, object] = {}
    with start_in_thread(policies={MODEL: policy}) as server:
        request = fault_request(run, tmp_path, server.url, images["harness"], tasks=TASKS, path=path)

        def restart_mid_eval() -> None:
            wait_for(lambda: policy.opened >= 2, "a second rollout to be in its box's sleep", poll_s=0.02)
            fault["finished_before"] = finished_lines(request.run_dir)
            fault["killed"] = _kill_dockerd()
            time.sleep(DOWN_S)
            fault["restart"] = subprocess.run(["bash", str(ENSURE_DOCKER)], capture_output=True, text=True, timeout=180)

        outcome = eval_during_fault(request, restart_mid_eval, join_s=240)
    restart = fault.get("restart")
    assert isinstance(restart, subprocess.CompletedProcess) and restart.returncode == 0, (
        f"the engine did not come back: {restart}"
    )
    assert isinstance(fault["finished_before"], int) and fault["finished_before"] < TASKS, (
        "the outage came after the eval"
    )
    assert len(outcome.episodes) == TASKS, f"episodes lost: {len(outcome.episodes)} of {TASKS} recorded"
    assert outcome.failures == [], [(e.task, e.stop_condition, e.errors) for e in outcome.failures]
    assert [e.reward for e in outcome.episodes] == [1.0] * TASKS
    assert docker_paths(request.run_dir) == [path] * TASKS
    assert outcome.retries >= 1, "no rollout was retried, so the outage hit nothing"
    assert containers_of(run) == []
    print(
        f"retries: {outcome.retries} ({sorted({x['type'] for e in outcome.episodes for x in e.errors})}); "
        f"containers the restart orphaned, removed by Arena: {len(outcome.reaped)}"
    )
