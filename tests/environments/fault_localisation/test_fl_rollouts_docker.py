"""fault-localisation through real harnesses in docker: the oracle reaches the log_search toolset
over MCP from claude_code and codex, and every cheater gains nothing, denied and audited."""

import pytest

from arena.audit import build_report
from arena.server import start_in_thread
from arena_testkit.env_runs import env_eval

pytestmark = pytest.mark.docker
ENV = "fault-localisation"
DENIED_BY = {
    "cheater_read_store": "grader-material",
    "cheater_host_probe": "host-probe",
    "cheater_net_egress": "net-egress",
}


@pytest.mark.parametrize("harness", ["claude_code", "codex"])
def test_oracle_solves_a_task_through_mcp(harness, images, tmp_path):
    with start_in_thread() as server:
        outcome = env_eval(server.url, ENV, "oracle", harness, tmp_path)
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.metrics["queries_used"] >= 1
    assert episode.reward == 1.0


@pytest.mark.parametrize("harness", ["bash", "claude_code", "codex"])
@pytest.mark.parametrize("cheater", [*DENIED_BY, "cheater_over_budget"])
def test_cheater_gains_nothing_and_what_was_blocked_is_audited(cheater, harness, images, tmp_path):
    with start_in_thread() as server:
        outcome = env_eval(server.url, ENV, cheater, harness, tmp_path)
    outcome.raise_for_failures()
    [episode] = outcome.episodes
    assert episode.reward <= 0.05
    report = build_report(outcome.run_dir)
    if cheater in DENIED_BY:  # denied before it ran, and on the record
        assert report.by_rule.get(DENIED_BY[cheater], 0) >= 1, report
        assert report.by_harness == {harness: report.total}
    else:  # by construction: the toolset refuses queries past the budget
        assert episode.metrics["queries_used"] == 20
        assert episode.info["submission"] is None
