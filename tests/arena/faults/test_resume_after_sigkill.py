"""vf-eval SIGKILLed mid-eval, then resumed (`EvalRequest.resume`): the episodes it had finished are
kept as they were and not run again (the model server serves exactly the missing episodes' calls),
and every episode ends scored with no container left, on both docker paths."""

import dataclasses
import os
import signal
import uuid

import pytest
from arena_testkit.fault_runs import (
    CALLS_PER_EPISODE,
    MODEL,
    TASKSETS,
    CountingPolicy,
    containers_of,
    docker_paths,
    fault_request,
    finished_lines,
    wait_for,
)

from arena.evalrun import launch_eval, run_eval
from arena.reaper import reap
from arena.server import start_in_thread
from arena.traces import read_traces

pytestmark = pytest.mark.docker
TASKS = 6


@pytest.mark.parametrize("path", list(TASKSETS))
def test_a_killed_eval_resumes_without_rerunning_its_finished_episodes(images, tmp_path, path):
    policy = CountingPolicy()
    run = f"fault-resume-{uuid.uuid4().hex[:8]}"
    with start_in_thread(policies={MODEL: policy}) as server:
        request = fault_request(run, tmp_path, server.url, images["harness"], tasks=TASKS, path=path)
        proc = launch_eval(request)
        try:
            wait_for(lambda: finished_lines(request.run_dir) >= 2, "two episodes to finish")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # no cleanup of vf-eval's runs
            proc.wait()
        before = read_traces(request.run_dir)
        kept = {e.id: e.timing for e in before.episodes if not e.failed}
        assert 2 <= len(kept) < TASKS, f"{len(kept)} episodes finished before the kill"
        reap(run)  # what `arena reap --run` does after a SIGKILL: the killed run's boxes
        calls_before = policy.calls

        outcome = run_eval(dataclasses.replace(request, resume=True), progress=lambda _line: None)

    assert len(outcome.episodes) == TASKS
    assert outcome.failures == [], [(e.task, e.stop_condition, e.errors) for e in outcome.failures]
    assert [e.reward for e in outcome.episodes] == [1.0] * TASKS
    assert docker_paths(request.run_dir) == [path] * TASKS
    after = {e.id: e.timing for e in outcome.episodes}
    assert {i: after.get(i) for i in kept} == kept, "a finished episode was run again or dropped"
    assert policy.calls - calls_before == CALLS_PER_EPISODE * (TASKS - len(kept)), "the resume re-ran finished episodes"
    assert containers_of(run) == []
    print(f"kept {len(kept)} of {TASKS}; the resume served {policy.calls - calls_before} model calls")
