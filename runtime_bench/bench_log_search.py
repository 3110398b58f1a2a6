"""Benchmark: log_search query latency on a 1M-line incident (goal: p50 < 10 ms), plus the time to
generate the incident and build its store.

Not a test. Run `python runtime_bench/bench_log_search.py [--lines 1000000] [--queries 400]`.
Queries are a seeded mix of what agents ask (counts by service/level/minute, searches by service,
level, window and text), timed through the toolset's own tool methods in process: argument
checks, the SQLite/FTS5 query and the JSON result, but not the MCP transport.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from arena_kit.verifiers_seam.toolset import bound_state
from fault_localisation.generate import Knobs, generate, iso, split_seeds
from fault_localisation.taskset import build_incident_store
from log_search.toolset import LogSearchConfig, LogSearchState, LogSearchToolset, ServiceInfo

TEXTS = (
    "timeout",
    '"No space left on device"',
    "connection pool",
    "certificate",
    "retry*",
    "429 OR quota",
    "slow query",
    '"call to"',
)


def _queries(rng: random.Random, start_ms: int, end_ms: int, services: list[str], count: int):
    for _ in range(count):
        a = rng.randrange(start_ms, end_ms - 60_000)
        b = rng.choice([min(end_ms, a + rng.choice([60_000, 300_000, 900_000])), end_ms])
        window = {"start": iso(a), "end": iso(b)}
        kind = rng.choice(
            [
                "count_service",
                "count_minute",
                "count_level",
                "search_service",
                "search_level",
                "search_text",
                "count_text",
            ]
        )
        level = rng.choice([None, "WARN", "ERROR"])
        if kind == "count_service":
            yield kind, "count_logs", {**window, "group_by": "service", "min_level": level}
        elif kind == "count_minute":
            yield (
                kind,
                "count_logs",
                {**window, "group_by": "minute", "service": rng.choice(services), "min_level": level},
            )
        elif kind == "count_level":
            yield kind, "count_logs", {**window, "group_by": "level"}
        elif kind == "search_service":
            yield kind, "search_logs", {**window, "service": rng.choice(services), "min_level": level, "limit": 50}
        elif kind == "search_level":
            yield kind, "search_logs", {**window, "min_level": rng.choice(["WARN", "ERROR"]), "limit": 200}
        elif kind == "search_text":
            yield kind, "search_logs", {**window, "text": rng.choice(TEXTS), "limit": 50}
        else:
            yield kind, "count_logs", {**window, "group_by": "service", "text": rng.choice(TEXTS)}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _time_queries(state: LogSearchState, queries) -> dict[str, list[float]]:
    toolset = LogSearchToolset(LogSearchConfig())
    timings: dict[str, list[float]] = defaultdict(list)
    with bound_state(state):
        await toolset.count_logs(start=state.window_start, end=state.window_end)  # open the store once
        for kind, tool, args in queries:
            state.queries_used = 0
            t0 = time.perf_counter()
            await getattr(toolset, tool)(**{k: v for k, v in args.items() if v is not None})
            timings[kind].append((time.perf_counter() - t0) * 1000)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--services", type=int, default=40)
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args(argv)
    incident = generate(split_seeds("dev", 1)[0], Knobs(services=args.services, lines=args.lines))

    t0 = time.perf_counter()
    lines = sum(1 for _ in incident.rows())
    generation = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bench-log-search-") as tmp:
        t0 = time.perf_counter()
        path = build_incident_store(incident, Path(tmp))
        build = time.perf_counter() - t0
        size_mb = path.stat().st_size / 2**20
        state = LogSearchState(
            store_path=str(path),
            budget=10**9,
            window_start=iso(incident.start_ms),
            window_end=iso(incident.end_ms),
            services=[ServiceInfo(name=s.name, role=s.role, calls=list(s.calls)) for s in incident.services],
        )
        queries = list(
            _queries(
                random.Random(0), incident.start_ms, incident.end_ms, [s.name for s in incident.services], args.queries
            )
        )
        timings = asyncio.run(_time_queries(state, queries))

    print(f"incident: {lines:,} lines, {args.services} services")
    print(f"generate (iterate all rows): {generation:6.2f} s  ({generation / lines * 1e6:.1f} µs/line)")
    print(f"build store (generate + SQLite + FTS5 + rollup): {build:6.2f} s, {size_mb:.0f} MiB")
    every = [t for values in timings.values() for t in values]
    print(f"{'query kind':<16}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for kind in sorted(timings):
        values = timings[kind]
        p50, p95 = statistics.median(values), _pct(values, 0.95)
        print(f"{kind:<16}{len(values):>5}{p50:>10.2f}{p95:>10.2f}{max(values):>10.2f}")
    p50 = statistics.median(every)
    print(f"{'all':<16}{len(every):>5}{p50:>10.2f}{_pct(every, 0.95):>10.2f}{max(every):>10.2f}")
    print(f"p50 {p50:.2f} ms (goal < 10 ms)")
    return 0 if p50 < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
