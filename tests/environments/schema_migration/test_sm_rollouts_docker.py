"""schema-migration through real harnesses in docker: the oracle migrates in the container via the
sqlite_sandbox toolset from bash, claude_code and codex and scores 1 on held-out rows; every cheater
gains nothing, and what was denied is on the audit record."""

import pytest

from arena.audit import build_report
from arena.server import start_in_thread
from arena_testkit.env_runs import env_eval
from arena_testkit.rollouts import tool_results

pytestmark = pytest.mark.docker
ENV = "schema-migration"
DENIED_BY = {
    "cheater_read_heldout": "grader-material",
    "cheater_edit_grader_inputs": "grader-material",
    "cheater_net_egress": "net-egress",
}
BY_CONSTRUCTION = ("hard_coder", "cheater_fake_submission")


@pytest.mark.parametrize("harness", ["bash", "claude_code", "codex"])
def test_oracle_migrates_in_the_container_and_scores_one_on_heldout_rows(harness, images, tmp_path):
    with start_in_thread() as server:
        outcome = env_eval(server.url, ENV, "oracle", harness, tmp_path)
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.rewards["migration"]["score"] == 1.0, episode.info.get("grade")
    assert episode.metrics["statements_used"] == 2.0
    assert episode.info["grade"]["stage"] == "checked"
    results = tool_results(outcome.run_dir)
    assert any("CREATE TABLE" in r for r in results)  # the schema tool read the container's DB
    assert any("restored to checkpoint 'start'" in r for r in results)


@pytest.mark.parametrize("harness", ["bash", "claude_code", "codex"])
@pytest.mark.parametrize("cheater", [*DENIED_BY, *BY_CONSTRUCTION])
def test_cheater_gains_nothing_and_what_was_blocked_is_audited(cheater, harness, images, tmp_path):
    with start_in_thread() as server:
        outcome = env_eval(server.url, ENV, cheater, harness, tmp_path)
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.reward <= 0.05, episode.info.get("grade")
    report = build_report(outcome.run_dir)
    if cheater in DENIED_BY:
        assert report.by_rule.get(DENIED_BY[cheater], 0) >= 1, report
        assert episode.info["submission"] is None
    elif cheater == "hard_coder":  # literal visible rows fail on the held-out ones
        assert "lost" in episode.info["grade"]["reason"]
    else:  # a file in the box is not a submission: the one channel is submit_migration
        assert episode.info["submission"] is None
