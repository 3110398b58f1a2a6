"""fault_localisation.grade: the scoring table, rule by rule."""

import pytest

from fault_localisation.generate import Label
from fault_localisation.grade import RULES, Claim, efficiency, grade

INCIDENT = Label("payments", "connection_pool_exhaustion", "2024-03-05T14:21:07.412Z")
CONTROL = Label("none", "none", None)
ONSET = "2024-03-05T14:21:07.412Z"


@pytest.mark.parametrize(("claim", "label", "score"), [
    pytest.param(Claim("payments", "connection_pool_exhaustion", ONSET), INCIDENT, 1.0, id="all-right"),
    pytest.param(Claim("payments", "connection_pool_exhaustion", "2024-03-05T14:23:00Z"), INCIDENT, 1.0,
                 id="onset-within-tolerance"),
    pytest.param(Claim("payments", "connection_pool_exhaustion", "2024-03-05T14:25:00Z"), INCIDENT, 0.85,
                 id="onset-too-far"),
    pytest.param(Claim("payments", "connection_pool_exhaustion", "not a time"), INCIDENT, 0.85, id="onset-garbled"),
    pytest.param(Claim("payments", "disk_full", ONSET), INCIDENT, 0.75, id="wrong-kind"),
    pytest.param(Claim("payments", "disk_full", None), INCIDENT, 0.6, id="service-only"),
    pytest.param(Claim("api-gateway", "connection_pool_exhaustion", ONSET), INCIDENT, 0.0, id="wrong-service"),
    pytest.param(Claim("none", "none", None), INCIDENT, 0.0, id="none-on-an-incident"),
    pytest.param(None, INCIDENT, 0.0, id="no-answer-on-an-incident"),
    pytest.param(Claim("none", "none", None), CONTROL, 1.0, id="none-on-a-control"),
    pytest.param(Claim("payments", "disk_full", ONSET), CONTROL, 0.0, id="service-on-a-control"),
    pytest.param(None, CONTROL, 0.0, id="no-answer-on-a-control"),
])
def test_credit_follows_the_scoring_table(claim, label, score):
    result = grade(claim, label, queries_used=RULES.free_queries)
    assert result.score == pytest.approx(score)
    assert result.efficiency == 1.0 and result.reason


def test_efficiency_is_full_up_to_the_free_queries_then_falls_per_query():
    assert [efficiency(n) for n in (0, RULES.free_queries)] == [1.0, 1.0]
    assert efficiency(RULES.free_queries + 1) == pytest.approx(1 - RULES.penalty_per_query)
    assert efficiency(10_000) == RULES.min_efficiency


def test_spending_the_default_budget_of_20_costs_well_over_0_15():
    early = grade(Claim("payments", "connection_pool_exhaustion", ONSET), INCIDENT, queries_used=5)
    late = grade(Claim("payments", "connection_pool_exhaustion", ONSET), INCIDENT, queries_used=20)
    assert early.score - late.score >= 0.15 + 0.25


def test_the_reason_names_what_was_right_and_wrong():
    result = grade(Claim("payments", "disk_full", "2024-03-05T14:40:00Z"), INCIDENT, queries_used=3)
    assert "service right" in result.reason and "kind wrong" in result.reason and "onset off" in result.reason
    assert "wrong service" in grade(Claim("auth", "disk_full", ONSET), INCIDENT, 3).reason
