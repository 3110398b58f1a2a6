"""Real vf-eval rollouts of schema-migration in its image: setup, the shared sandbox toolset, the reward."""

import pytest
from arena.evalrun import EvalRequest, run_eval
from arena.server import start_in_thread
from support.rollouts import tool_results

pytestmark = pytest.mark.docker


def _eval(policy: str, images, tmp_path, num_tasks: int):
    with start_in_thread() as server:
        return run_eval(
            EvalRequest(
                taskset="schema-migration", harness="bash", model=f"arena/schema-migration/{policy}",
                image=images["schema-migration"], base_url=server.url, run_name=f"schema-migration-{policy}",
                output_dir=tmp_path, num_tasks=num_tasks, max_concurrent=2, taskset_args={"split": "dev"},
            ),  # fmt: skip
            progress=lambda _line: None,
        )


def test_the_oracle_migrates_in_the_container_and_scores_one_on_heldout_rows(images, tmp_path):
    outcome = _eval("oracle", images, tmp_path, num_tasks=2)
    outcome.raise_for_failures()
    assert len(outcome.episodes) == 2
    for episode in outcome.episodes:
        assert episode.rewards["migration"]["score"] == 1.0, episode.info.get("grade")
        assert episode.metrics["statements_used"] == 2.0
        assert episode.info["grade"]["stage"] == "checked"
    results = tool_results(outcome.run_dir)
    assert any("CREATE TABLE" in r and "rows" in r for r in results)  # schema tool, read in the container
    assert any("restored to checkpoint 'start'" in r for r in results)


def test_the_hard_coder_is_caught_by_the_heldout_rows(images, tmp_path):
    outcome = _eval("hard_coder", images, tmp_path, num_tasks=1)
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.rewards["migration"]["score"] <= 0.05
    assert "lost" in episode.info["grade"]["reason"]
