"""The model server dies mid-eval and comes back on its port a few seconds later: the rollouts it
failed are retried (`arena.retries`, whole episodes), every episode ends scored, and no container is
left, on both docker paths (a lean box is lent to its rollout, so only an episode retry re-rolls it)."""

import time
import uuid

import pytest
from arena_testkit.fault_runs import (
    MODEL,
    TASKSETS,
    CountingPolicy,
    containers_of,
    docker_paths,
    eval_during_fault,
    fault_request,
    wait_for,
)

from arena.server import start_in_thread

pytestmark = pytest.mark.docker
TASKS = 6
DOWN_S = 12.0
"""Longer than the bash harness's own client retries (openai's 2, about 3 s) plus the policy's 3 s
sleep: every rollout in flight then sees a call fail."""


@pytest.mark.parametrize("path", list(TASKSETS))
def test_an_eval_survives_its_model_server_going_down_and_coming_back(images, tmp_path, path):
    policy = CountingPolicy()
    servers = [start_in_thread(policies={MODEL: policy})]
    port = servers[0].port
    run = f"fault-model-{uuid.uuid4().hex[:8]}"
    request = fault_request(run, tmp_path, servers[0].url, images["harness"], tasks=TASKS, path=path)
    outage: dict[str, float] = {}

    def outage_mid_eval() -> None:
        # The server goes down the moment it has opened a second episode: that rollout is in its
        # 3 s sleep, so its next call lands in the outage. (Waiting for a call count instead let the
        # outage slip into a gap on a loaded machine: both rollouts finished their last calls and
        # the next two were still starting their containers when the server came back.)
        wait_for(lambda: policy.opened >= 2, "a second rollout to open its episode", poll_s=0.02)
        servers[-1].stop()
        outage["calls_before"] = policy.calls
        time.sleep(DOWN_S)
        servers.append(start_in_thread(policies={MODEL: policy}, port=port))

    try:
        outcome = eval_during_fault(request, outage_mid_eval, join_s=200)
    finally:
        servers[-1].stop()
    assert len(servers) == 2, "the outage never happened"
    assert len(outcome.episodes) == TASKS, f"episodes lost: {len(outcome.episodes)} of {TASKS} recorded"
    assert outcome.failures == [], [(e.task, e.stop_condition, e.errors) for e in outcome.failures]
    assert [e.reward for e in outcome.episodes] == [1.0] * TASKS
    assert docker_paths(request.run_dir) == [path] * TASKS
    assert outcome.retries >= 1, "no rollout was retried, so the outage hit nothing"
    assert {x["type"] for e in outcome.episodes for x in e.errors} == {"ProviderError"}
    assert containers_of(run) == [] and outcome.reaped == ()
    print(f"retries: {outcome.retries}, calls before the outage {outage['calls_before']}, after {policy.calls}")
