"""The runtime benchmark's one-task taskset (verifiers id `arena-bench`): run one shell command,
call one MCP tool, answer. Put `runtime_bench/bench_taskset` on PYTHONPATH to resolve it."""

from arena_bench.taskset import BenchTaskset

__all__ = ["BenchTaskset"]
