"""log_search.store: queries agree with brute force over the rows; builds are atomic and shared."""

import random
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

from arena_testkit.log_fixture import END_MS, SERVICES, START_MS, WORDS, synthetic_rows, synthetic_store
from log_search import store as store_module
from log_search.store import (
    LEVELS,
    InvalidQuery,
    LogStore,
    Query,
    QueryTooCostly,
    build_store,
    ensure_store,
    format_ts,
)


@pytest.fixture(scope="module")
def rows():
    return synthetic_rows()


@pytest.fixture(scope="module")
def store(rows, tmp_path_factory) -> LogStore:
    return LogStore(synthetic_store(tmp_path_factory.mktemp("store"), rows))


def _matches(row, q: Query) -> bool:
    ts, level, service, _, _, message = row
    return (
        q.start_ms <= ts < q.end_ms
        and (q.service is None or service == q.service)
        and (q.min_level is None or LEVELS.index(level) >= LEVELS.index(q.min_level))
        and (q.text is None or q.text in message.split())
    )


def _random_queries(count: int):
    rng = random.Random(3)
    for _ in range(count):
        a = START_MS + rng.randrange(END_MS - START_MS)
        if rng.random() < 0.3:  # minute-aligned edges exercise the pure-rollup path
            a -= a % 60_000
        b = min(END_MS, a + rng.choice([1, 999, 60_000, 61_001, 600_000, 3_600_000]))
        yield Query(a, b, rng.choice([None, *SERVICES]), rng.choice([None, *LEVELS]), rng.choice([None, None, *WORDS]))


def test_counts_agree_with_a_brute_force_count_for_any_window_and_filters(rows, store):
    for q in _random_queries(150):
        matching = [r for r in rows if _matches(r, q)]
        assert store.count(q, "service") == {s: n for s, n in Counter(r[2] for r in matching).items()}
        assert store.count(q, "level") == dict(Counter(r[1] for r in matching))
        by_minute = Counter(format_ts(r[0] - r[0] % 60_000) for r in matching)
        assert store.count(q, "minute") == dict(sorted(by_minute.items()))


def test_search_returns_the_oldest_matching_lines_first_with_the_exact_total(rows, store):
    for q in _random_queries(60):
        matching = [r for r in rows if _matches(r, q)]
        lines, total, lower_bound = store.search(q, 20)
        assert total == len(matching) and not lower_bound
        assert [(line.ts_ms, line.message) for line in lines] == [(r[0], r[5]) for r in matching[:20]]


def test_a_text_search_reports_a_lower_bound_once_matches_pass_the_cap(store, monkeypatch):
    monkeypatch.setattr(store_module, "SEARCH_TOTAL_CAP", 5)
    lines, total, lower_bound = store.search(Query(START_MS, END_MS, text="timeout"), 3)
    assert (len(lines), total, lower_bound) == (3, 5, True)


def test_phrases_and_boolean_operators_follow_fts5_syntax(store, rows):
    q = Query(START_MS, END_MS, text='"acquiring connection" OR pool')
    expected = [r for r in rows if "acquiring connection" in r[5] or "pool" in r[5].split()]
    assert sum(store.count(q, "level").values()) == len(expected)


@pytest.mark.parametrize("text", ['"unterminated', "AND", "foo:bar", "orders-db", "active=50", "*", "(x"])
def test_malformed_text_is_an_invalid_query(store, text):
    with pytest.raises(InvalidQuery):
        store.search(Query(START_MS, END_MS, text=text), 5)
    with pytest.raises(InvalidQuery):
        store.count(Query(START_MS, END_MS, text=text), "service")


def test_an_unknown_grouping_is_an_invalid_query(store):
    with pytest.raises(InvalidQuery):
        store.count(Query(START_MS, END_MS), "instance")


def test_a_service_that_never_logged_matches_nothing(store):
    assert store.count(Query(START_MS, END_MS, service="silent"), "service") == {}


def test_concurrent_callers_share_one_build(tmp_path: Path):
    builds = []
    barrier = threading.Barrier(4)

    def rows():
        builds.append(1)
        return synthetic_rows(count=200)

    def worker(out: list):
        barrier.wait()
        out.append(ensure_store(tmp_path, "incident-1", rows, {}))

    paths: list[Path] = []
    threads = [threading.Thread(target=worker, args=(paths,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(builds) == 1
    assert len(set(paths)) == 1 and paths[0].is_file()
    assert not list(tmp_path.glob("*.building"))


def test_a_failed_build_leaves_nothing_behind_and_the_next_call_builds(tmp_path: Path):
    def broken():
        yield from synthetic_rows(count=50)
        raise RuntimeError("generator failed")

    with pytest.raises(RuntimeError):
        ensure_store(tmp_path, "incident-2", broken, {})
    assert not list(tmp_path.glob("*.sqlite")) and not list(tmp_path.glob("*.building"))
    path = ensure_store(tmp_path, "incident-2", lambda: synthetic_rows(count=50), {})
    assert LogStore(path).meta["lines"] == "50"


def test_store_keys_must_be_plain_file_names(tmp_path: Path):
    with pytest.raises(ValueError):
        ensure_store(tmp_path, "../escape", lambda: [], {})


SHARED_TRACE = "00000000000000aa"


@pytest.fixture(scope="module")
def traced(rows, tmp_path_factory) -> tuple[list, LogStore]:
    """The synthetic rows plus one request whose lines share a trace id across every service."""
    request = [
        (
            START_MS + 1_000 * i + 7,
            LEVELS[i % len(LEVELS)],
            SERVICES[i % len(SERVICES)],
            "pod-2",
            SHARED_TRACE,
            f"{WORDS[i % len(WORDS)]} hop {i}",
        )
        for i in range(12)
    ]
    all_rows = sorted(rows + request)
    directory = tmp_path_factory.mktemp("traced")
    return all_rows, LogStore(synthetic_store(directory, all_rows))


@pytest.mark.parametrize(
    "query",
    [
        Query(START_MS, END_MS, trace=SHARED_TRACE),
        Query(START_MS, END_MS, service="payments", trace=SHARED_TRACE),
        Query(START_MS, END_MS, min_level="ERROR", trace=SHARED_TRACE),
        Query(START_MS, START_MS + 5_000, text="hop", trace=SHARED_TRACE),
        Query(START_MS, END_MS, trace="0000000000000005"),
        Query(START_MS, END_MS, trace="ffffffffffffffff"),
    ],
    ids=["trace", "with-service", "with-level", "with-window-and-text", "single-line", "unknown"],
)
def test_a_trace_filter_matches_exactly_that_requests_lines_combined_with_the_others(traced, query):
    rows, store = traced
    matching = [
        r
        for r in rows
        if _matches(r, query) and r[4] == query.trace and (query.text is None or query.text in r[5].split())
    ]
    lines, total, _ = store.search(query, 50)
    assert [(line.ts_ms, line.service, line.trace) for line in lines] == [(r[0], r[2], r[4]) for r in matching]
    assert total == len(matching)
    assert store.count(query, "service") == dict(Counter(r[2] for r in matching))
    assert sum(store.count(query, "minute").values()) == len(matching)


def test_a_trace_lookup_uses_its_index(traced):
    _, store = traced
    where, args = store._where(Query(START_MS, END_MS, trace=SHARED_TRACE))
    plan = " ".join(
        row[-1] for row in store._con().execute(f"EXPLAIN QUERY PLAN SELECT * FROM logs WHERE {where}", args)
    )
    assert "logs_trace" in plan


def test_a_store_from_an_older_schema_is_rebuilt_not_reused(tmp_path: Path):
    stale = tmp_path / "incident-3.v1.sqlite"
    build_store(stale, synthetic_rows(count=20), {})
    path = ensure_store(tmp_path, "incident-3", lambda: synthetic_rows(count=30), {})
    assert path != stale and LogStore(path).meta["lines"] == "30"


def test_a_store_without_the_current_schema_mark_is_refused(tmp_path: Path):
    path = tmp_path / "old.sqlite"
    build_store(path, synthetic_rows(count=20), {})
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM meta WHERE key = 'schema'")
    with pytest.raises(ValueError, match="rebuild"):
        LogStore(path)


@pytest.mark.slow
def test_a_query_that_runs_past_the_deadline_is_interrupted(store):
    slow = LogStore(store.path, deadline_s=0.5)
    chain = " ".join(["timeout"] * 80_000)  # an AND chain that ran 303 s before the deadline existed
    # Only the store's deadline raises QueryTooCostly, naming it; without it the chain would finish (in minutes).
    with pytest.raises(QueryTooCostly, match=r"interrupted after 0\.5 s"):
        slow.count(Query(START_MS, END_MS, text=chain), "minute")
    with pytest.raises(QueryTooCostly, match=r"interrupted after 0\.5 s"):
        slow.search(Query(START_MS, END_MS, text=chain), 5)
    # the interrupted connection still serves the next query on its own fresh deadline
    assert sum(slow.count(Query(START_MS, END_MS, text="timeout"), "level").values()) > 0
