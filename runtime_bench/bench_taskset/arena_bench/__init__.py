"""The runtime benchmark's one-task taskset (verifiers id `arena-bench`): run one shell command,
call one MCP tool, answer. Put `runtime_bench/bench_taskset` on PYTHONPATH to resolve it. Its env
(`BenchEnv`, a `LeanEnv`) runs docker rollouts on the lean or the stock path (taskset option `docker`)."""

from arena_bench.env import BenchEnv
from arena_bench.taskset import BenchTaskset

__all__ = ["BenchEnv", "BenchTaskset"]
