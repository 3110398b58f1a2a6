"""The evidence rule end to end: a report's cited requests, checked against what the agent opened
through the real toolset and what the incident's users' requests were. Every citation an
adversary can make without following the users' failed request earns at most the unsupported
credit; the honest report earns full credit."""

import asyncio
from collections.abc import Sequence
from itertools import islice

import pytest

from arena_kit.policy import CallTool
from arena_kit.scripted import ScriptedPolicy
from arena_testkit.fault_episode import dev_tasks, run_episode
from fault_localisation.fault_stream import fault_requests, users_requests
from fault_localisation.generate import Incident, generate, iso
from fault_localisation.grade import RULES
from fault_localisation.taskset import incident_key, incident_of

pytestmark = pytest.mark.slow  # builds a few incidents' stores


def _incident_with_everything(tasks):
    """A dev task whose users' fault has an intermediate caller on a failed request, a request that
    timed out at the edge, and a concurrent fault's request that reached its root."""
    for task in tasks:
        incident = incident_of(task.data)
        if incident.fault is None or not incident.twins:
            continue
        mine = [
            r
            for r in fault_requests(incident, incident.fault, "fault")
            if r.edge == incident.edge and r.endpoint == incident.endpoint
        ]
        if any(len(r.crossed) >= 2 for r in mine) and any(not r.crossed for r in mine):
            return task, incident
    raise AssertionError("no dev task with a caller on a request and one that timed out")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return _incident_with_everything(dev_tasks(12, tmp_path_factory.mktemp("stores")))


def _window(incident: Incident) -> dict[str, str]:
    return {"start": iso(incident.start_ms), "end": iso(incident.end_ms)}


def _open(incident: Incident, trace: str, **filters: str) -> CallTool:
    return CallTool("search_logs", {**_window(incident), "trace": trace, "limit": 200, **filters})


def _report(service: str, kind: str, evidence: Sequence[str]) -> CallTool:
    return CallTool("submit_root_cause", {"service": service, "fault_kind": kind, "evidence": list(evidence)})


def _play(task, actions: list) -> float:
    episode = asyncio.run(run_episode(ScriptedPolicy(actions), task))
    return episode.reward


def _requests(incident: Incident):
    mine = [
        r
        for r in fault_requests(incident, incident.fault, "fault")
        if r.edge == incident.edge and r.endpoint == incident.endpoint
    ]
    deep = next(r for r in reversed(mine) if len(r.crossed) >= 2)
    timed_out = next(r for r in reversed(mine) if not r.crossed)
    twin = next(
        r
        for i, t in enumerate(incident.twins)
        for r in reversed(fault_requests(incident, t, f"twin{i}"))
        if r.edge == incident.edge and r.crossed
    )
    return deep, timed_out, twin


def test_the_honest_report_cites_an_opened_users_request_and_earns_full_credit(case):
    task, incident = case
    deep, _, _ = _requests(incident)
    label = task.data.label
    assert deep.trace in users_requests(incident)
    assert _play(task, [_open(incident, deep.trace), _report(label.service, label.fault_kind, [deep.trace])]) == 1.0


def test_a_users_request_never_opened_earns_only_the_unsupported_credit(case):
    task, incident = case
    deep, _, _ = _requests(incident)
    label = task.data.label
    assert _play(task, [_report(label.service, label.fault_kind, [deep.trace])]) == pytest.approx(RULES.unsupported)


def test_a_request_opened_so_that_the_root_never_showed_is_not_evidence(case):
    task, incident = case
    deep, _, _ = _requests(incident)
    label = task.data.label
    actions = [
        _open(incident, deep.trace, service=incident.edge),
        _report(label.service, label.fault_kind, [deep.trace]),
    ]
    assert _play(task, actions) == pytest.approx(RULES.unsupported)


def test_a_concurrent_faults_request_supports_neither_its_root_nor_the_users(case):
    task, incident = case
    _, _, twin = _requests(incident)
    label = task.data.label
    assert twin.endpoint != incident.endpoint and twin.trace not in users_requests(incident)
    opened = _open(incident, twin.trace)
    assert _play(task, [opened, _report(twin.crossed[0], label.fault_kind, [twin.trace])]) == 0.0
    assert _play(task, [opened, _report(label.service, label.fault_kind, [twin.trace])]) == pytest.approx(
        RULES.unsupported
    )


def test_a_request_that_timed_out_at_the_edge_shows_no_root_and_supports_nothing(case):
    task, incident = case
    _, timed_out, _ = _requests(incident)
    label = task.data.label
    actions = [_open(incident, timed_out.trace), _report(label.service, label.fault_kind, [timed_out.trace])]
    assert _play(task, actions) == pytest.approx(RULES.unsupported)


def test_naming_a_caller_on_the_users_request_is_a_wrong_service(case):
    task, incident = case
    deep, _, _ = _requests(incident)
    caller = deep.crossed[1]
    assert caller != task.data.label.service
    assert _play(task, [_open(incident, deep.trace), _report(caller, task.data.label.fault_kind, [deep.trace])]) == 0.0


def test_one_bad_citation_among_good_ones_spoils_the_report_and_more_than_three_are_refused(case):
    task, incident = case
    deep, timed_out, twin = _requests(incident)
    label = task.data.label
    opens = [_open(incident, deep.trace), _open(incident, twin.trace)]
    assert _play(task, [*opens, _report(label.service, label.fault_kind, [deep.trace, twin.trace])]) == pytest.approx(
        RULES.unsupported
    )
    others = list(islice(users_requests(incident) - {deep.trace}, 3))
    many = [*opens, _report(label.service, label.fault_kind, [deep.trace, *others])]
    assert _play(task, many) == 0.0  # refused: no report at all


def test_an_id_from_another_incident_is_refused_by_the_toolset(case, tmp_path):
    task, incident = case
    label = task.data.label
    other = generate(incident_key(task.data.seed + 1), task.data.knobs)
    foreign = next(iter(users_requests(other) or {"0123456789abcdef"}))
    assert foreign not in users_requests(incident)
    assert _play(task, [_report(label.service, label.fault_kind, [foreign])]) == 0.0  # refused: no report


def test_trace_ids_are_random_64_bit_and_unique(case):
    _, incident = case
    traces = [
        r.trace
        for f, tag in [(incident.fault, "fault"), *((t, f"twin{i}") for i, t in enumerate(incident.twins))]
        for r in fault_requests(incident, f, tag)
    ]
    assert len(traces) == len(set(traces)) > 50
    assert all(len(t) == 16 and int(t, 16) >= 0 for t in traces)
    # No order a cheap signal could walk: consecutive requests' ids share no prefix beyond chance.
    shared = sum(a[:3] == b[:3] for a, b in zip(traces, traces[1:]))
    assert shared <= 2
