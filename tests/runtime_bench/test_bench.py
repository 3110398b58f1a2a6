"""The benchmark itself, at a tiny size on real containers: `--quick`'s two paths (bash on the stock
path, arena-bash on the lean one) complete, report side by side, and leak nothing.

Timings are not asserted (they depend on the machine) beyond the model latency every turn waits;
the report's structure, zero failed rollouts and zero leaked containers are.
"""

import pytest

from arena.reaper import leftovers
from runtime_bench.config import BenchConfig
from runtime_bench.model import BenchReport
from runtime_bench.runner import run_bench
from runtime_bench.stats import PHASES

pytestmark = [pytest.mark.docker, pytest.mark.slow]


LATENCY = 0.5


def test_a_tiny_quick_bench_reports_both_paths_with_no_failures_or_leaks(images, tmp_path, daemons_cgroup):
    lines: list[str] = []
    config = BenchConfig(
        pairs=["docker/bash", "docker-lean/arena-bash"],
        levels=[1, 2],
        rollouts=2,
        latencies=[LATENCY],
        image=images["harness"],
        output_dir=tmp_path,
    )

    report, paths = run_bench(config.plan(), progress=lines.append)

    assert report.totals.model_dump() == {"rollouts": 8, "failures": 0, "leaked": 0}
    assert sum("floor" in line and "c=" in line for line in lines) == 2
    stock, lean = report.configs
    assert (stock.label, lean.label) == (
        "docker/bash/arena-bench/shared@0.5s",
        "docker-lean/arena-bash/arena-bench/shared@0.5s",
    )
    for config_report in (stock, lean):
        assert sum(config_report.label in line for line in lines) == 2
        assert [level.level for level in config_report.levels] == [1, 2]
        for level in config_report.levels:
            assert level.completed == level.rollouts == 2
            assert level.failures == 0 and level.leaked == 0
            assert set(level.phases) == set(PHASES)
            assert level.phases["total"].n == 2 and level.phases["teardown"].n == 2
            # three model turns (shell, tool, answer), each held LATENCY seconds by the server
            assert level.phases["agent_model"].p50 is not None and level.phases["agent_model"].p50 >= 3 * LATENCY
            assert level.cpu.containers_s is not None and level.cpu.docker_side_per_rollout_s is not None
            assert all(row["container"] for row in level.rows)
            assert leftovers(level.run) == []
    for entry in report.floor:
        assert entry.docker_run.failures == entry.docker_exec.failures == 0
        assert leftovers(entry.run) == []
    assert [(g.harness, g.path, g.latency) for g in report.goals] == [
        ("bash", "stock", LATENCY),
        ("arena-bash", "lean", LATENCY),
    ]
    assert all(goal.overhead_ratio is not None for goal in report.goals)
    assert [row.best_level in (1, 2) for row in report.capacity] == [True, True]
    assert report.meta.latencies == [LATENCY]
    assert BenchReport.model_validate_json(paths.json.read_text()).totals == report.totals
    text = paths.md.read_text()
    assert (
        "## docker/bash/arena-bench/shared@0.5s" in text and "## docker-lean/arena-bash/arena-bench/shared@0.5s" in text
    )
    assert paths.png.read_bytes()[:4] == paths.capacity_png.read_bytes()[:4] == b"\x89PNG"
