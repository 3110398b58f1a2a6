"""fault_localisation.grade: the scoring table, rule by rule."""

import pytest

from fault_localisation.generate import Label
from fault_localisation.grade import RULES, Claim, efficiency, grade

INCIDENT = Label("payments", "connection_pool_exhaustion")
CONTROL = Label("none", "none")
CITED = ("0123456789abcdef",)
SUPPORTED = (True, "1 opened request shows it failing")
UNSUPPORTED = (False, "never opened")


@pytest.mark.parametrize(
    ("claim", "label", "support", "score"),
    [
        pytest.param(Claim("payments", "connection_pool_exhaustion", CITED), INCIDENT, SUPPORTED, 1.0, id="all-right"),
        pytest.param(Claim("payments", "disk_full", CITED), INCIDENT, SUPPORTED, 0.7, id="wrong-kind"),
        pytest.param(
            Claim("payments", "connection_pool_exhaustion", CITED), INCIDENT, UNSUPPORTED, 0.1, id="unsupported"
        ),
        pytest.param(
            Claim("payments", "connection_pool_exhaustion"),
            INCIDENT,
            (False, "no request cited"),
            0.1,
            id="no-evidence",
        ),
        pytest.param(
            Claim("payments", "disk_full"), INCIDENT, (False, "no request cited"), 0.1, id="no-evidence-wrong-kind"
        ),
        pytest.param(
            Claim("api-gateway", "connection_pool_exhaustion", CITED), INCIDENT, SUPPORTED, 0.0, id="wrong-service"
        ),
        pytest.param(Claim("none", "none"), INCIDENT, UNSUPPORTED, 0.0, id="none-on-an-incident"),
        pytest.param(None, INCIDENT, UNSUPPORTED, 0.0, id="no-answer-on-an-incident"),
        pytest.param(Claim("none", "none"), CONTROL, UNSUPPORTED, 1.0, id="none-on-a-control"),
        pytest.param(Claim("payments", "disk_full", CITED), CONTROL, SUPPORTED, 0.0, id="service-on-a-control"),
        pytest.param(None, CONTROL, UNSUPPORTED, 0.0, id="no-answer-on-a-control"),
    ],
)
def test_credit_follows_the_scoring_table(claim, label, support, score):
    result = grade(claim, label, queries_used=RULES.free_queries, support=support)
    assert result.score == pytest.approx(score)
    assert result.efficiency == 1.0 and result.reason


def test_a_claim_carries_no_onset_so_dating_any_faults_start_earns_nothing():
    """The onset credit is gone (every concurrent fault starts within seconds of the others): a
    claim is its service, kind and evidence, and the table's weights sum to 1 without an onset."""
    assert set(Claim.__dataclass_fields__) == {"service", "fault_kind", "evidence"}
    assert not hasattr(INCIDENT, "onset")
    assert RULES.service + RULES.kind == pytest.approx(1.0)


def test_the_weight_moved_to_what_separates_and_a_guess_is_worth_little():
    assert RULES.service == pytest.approx(0.7) and RULES.kind == pytest.approx(0.3)
    # A guess among six failing roots, right one time in six, unsupported: about 0.017 a task.
    assert RULES.unsupported / 6 < 0.02


def test_efficiency_is_full_up_to_the_free_queries_then_falls_per_query():
    assert [efficiency(n) for n in (0, RULES.free_queries)] == [1.0, 1.0]
    assert efficiency(RULES.free_queries + 1) == pytest.approx(1 - RULES.penalty_per_query)
    assert efficiency(10_000) == RULES.min_efficiency


def test_spending_the_default_budget_of_20_costs_well_over_0_15():
    claim = Claim("payments", "connection_pool_exhaustion", CITED)
    early = grade(claim, INCIDENT, queries_used=5, support=SUPPORTED)
    late = grade(claim, INCIDENT, queries_used=20, support=SUPPORTED)
    assert early.score - late.score >= 0.15 + 0.25


def test_the_reason_names_what_was_right_and_wrong():
    result = grade(Claim("payments", "disk_full", CITED), INCIDENT, queries_used=3, support=SUPPORTED)
    assert "service right, supported" in result.reason and "kind wrong" in result.reason
    unsupported = grade(Claim("payments", "disk_full", CITED), INCIDENT, 3, UNSUPPORTED).reason
    assert "unsupported (never opened)" in unsupported
    assert "wrong service" in grade(Claim("auth", "disk_full"), INCIDENT, 3).reason
