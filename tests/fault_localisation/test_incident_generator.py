"""fault_localisation.generate: seeded, replayable incidents whose faults start at the root and
spread to its callers, with controls, herrings and no answer ids in the log text."""

import hashlib
import tracemalloc
from collections import Counter
from itertools import islice

import pytest

from fault_localisation.catalogue import FAULT_KINDS
from fault_localisation.generate import Incident, Knobs, Label, generate, split_seeds
from fault_localisation.policies import KIND_EVIDENCE
from fault_localisation.rng import Rng
from fault_localisation.topology import MAX_SERVICES, MIN_SERVICES, build_topology, callers_of

DEV = split_seeds("dev", 1000)
SMALL = Knobs(lines=5_000)


def digest(incident: Incident) -> str:
    h = hashlib.sha256()
    for row in incident.rows():
        h.update("\t".join(map(str, row)).encode() + b"\n")
    return h.hexdigest()


def faulty(count: int, knobs: Knobs = SMALL) -> list[Incident]:
    incidents = (generate(seed, knobs) for seed in DEV)
    return list(islice((i for i in incidents if i.fault is not None), count))


def test_the_same_seed_replays_byte_identical_logs():
    assert generate(DEV[3]) == generate(DEV[3])
    assert digest(generate(DEV[3])) == digest(generate(DEV[3]))


def test_different_seeds_give_different_logs():
    assert len({digest(generate(seed, SMALL)) for seed in DEV[:6]}) == 6


@pytest.mark.parametrize(("lines", "tolerance"), [(5_000, 0.05), (20_000, 0.05)])
def test_the_log_is_time_ordered_inside_the_window_and_about_the_requested_size(lines, tolerance):
    for seed in DEV[:8]:
        incident = generate(seed, Knobs(lines=lines))
        stamps = [row[0] for row in incident.rows()]
        assert stamps == sorted(stamps)
        assert incident.start_ms <= stamps[0] and stamps[-1] < incident.end_ms
        assert abs(len(stamps) - lines) < tolerance * lines


def test_a_fault_starts_at_its_root_and_reaches_each_caller_later():
    for incident in faulty(25):
        effects = {e.service: e for e in incident.fault.effects}
        calls = {s.name: s.calls for s in incident.services}
        root = incident.fault.root
        assert incident.label == Label(root.service, incident.fault.kind, incident.label.onset)
        for effect in incident.fault.effects[1:]:
            assert effect.dep in calls[effect.service]
            assert effect.onset_ms > effects[effect.dep].onset_ms
        first = {}
        for ts, level, service, _, _, message in incident.rows():
            if service in effects and ts >= effects[service].onset_ms and level in ("WARN", "ERROR"):
                first.setdefault(service, (ts, message))
        assert first[root.service][0] == root.onset_ms
        for effect in incident.fault.effects[1:]:
            ts, message = first[effect.service]
            assert ts == effect.onset_ms and effect.dep in message


def test_the_loudest_service_is_usually_not_the_root():
    incidents = faulty(40)
    loudest_is_root = 0
    for incident in incidents:
        after = Counter(r[2] for r in incident.rows()
                        if r[0] >= incident.fault.root.onset_ms and r[1] in ("WARN", "ERROR"))
        loudest_is_root += after.most_common(1)[0][0] == incident.fault.root.service
    assert loudest_is_root <= 0.2 * len(incidents)


def test_controls_have_no_fault_and_no_fault_wording():
    controls = list(islice((i for i in (generate(s, SMALL) for s in DEV) if i.fault is None), 5))
    assert len(controls) == 5
    for incident in controls:
        assert incident.label == Label("none", "none", None)
        for row in incident.rows():
            assert not any(pattern.search(row[5]) for _, pattern in KIND_EVIDENCE), row


def test_no_log_line_contains_a_fault_kind_id():
    ids = [kind.id for kind in FAULT_KINDS]
    for incident in faulty(30):
        for row in incident.rows():
            assert not any(kind_id in row[5] for kind_id in ids), row
        assert not {s.name for s in incident.services} & set(ids)


def test_incidents_are_distributed_sanely_across_seeds():
    incidents = [generate(seed) for seed in DEV]
    faults = [i.fault for i in incidents if i.fault is not None]
    assert 0.06 <= 1 - len(faults) / len(incidents) <= 0.14
    kinds = Counter(f.kind for f in faults)
    assert set(kinds) == {k.id for k in FAULT_KINDS} and min(kinds.values()) >= 0.03 * len(faults)
    for incident in incidents:
        assert len(incident.services) == 20
        if incident.fault is None:
            continue
        root = incident.fault.root
        assert callers_of(incident.services, root.service)
        assert 18 * 60_000 <= root.onset_ms - incident.start_ms < 38 * 60_000
        assert all(h.service != root.service for h in incident.herrings)
        assert len(incident.fault.effects) >= 2


def assert_acyclic(calls: dict[str, tuple[str, ...]], name: str, path: tuple[str, ...] = ()) -> None:
    assert name not in path, f"call cycle {path + (name,)}"
    for dep in calls[name]:
        assert_acyclic(calls, dep, path + (name,))


@pytest.mark.parametrize("count", [MIN_SERVICES, 20, MAX_SERVICES])
def test_topologies_are_acyclic_and_every_inner_service_has_a_caller(count):
    for seed in range(30):
        services = build_topology(Rng(seed), count)
        calls = {s.name: s.calls for s in services}
        assert len(services) == count
        for s in services:
            assert_acyclic(calls, s.name)
            if s.role not in ("edge", "worker"):
                assert callers_of(services, s.name), s


@pytest.mark.parametrize("count", [MIN_SERVICES - 1, MAX_SERVICES + 1])
def test_a_topology_size_outside_the_supported_range_is_refused(count):
    with pytest.raises(ValueError):
        build_topology(Rng(0), count)


def test_a_million_line_incident_streams_without_materialising_its_log():
    incident = generate(DEV[0], Knobs(services=40, lines=1_000_000))
    tracemalloc.start()
    try:
        first = list(islice(incident.rows(), 2_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(first) == 2_000
    assert peak < 20 * 2**20  # the full log would take hundreds of MB


def test_splits_use_disjoint_seed_ranges():
    train, dev, test = (set(split_seeds(s, 1_000_000)) for s in ("train", "dev", "test"))
    assert not train & dev and not dev & test and not train & test
    with pytest.raises(ValueError):
        split_seeds("holdout", 1)
