"""Benchmarks of Arena's runtime: what a containerised rollout costs, per phase, under concurrency.

`arena bench` (see `runtime_bench.cli`) runs the bench's own one-task taskset
(`runtime_bench/bench_taskset`, verifiers id `arena-bench`) with a scripted policy, so every rollout
does the same work and model time is what the bench sets (`--latency`, 0 by default); whatever
remains is infrastructure, on verifiers' stock docker path and on Arena's lean one side by side.
"""

from runtime_bench.config import BenchConfig, Combo, Plan
from runtime_bench.report import (
    build_report,
    render_markdown,
    render_plot,
    write_report,
)
from runtime_bench.runner import run_bench

__all__ = [
    "BenchConfig",
    "Combo",
    "Plan",
    "build_report",
    "render_markdown",
    "render_plot",
    "run_bench",
    "write_report",
]
