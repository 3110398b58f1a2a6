"""The benchmark itself, at a tiny size on real containers: it completes, reports, and leaks nothing.

Timings are not asserted (they depend on the machine); the report's structure, zero failed
rollouts and zero leaked containers are.
"""

import pytest

from arena.reaper import leftovers
from runtime_bench.config import BenchConfig
from runtime_bench.model import BenchReport
from runtime_bench.runner import run_bench
from runtime_bench.stats import PHASES

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_tiny_bash_bench_reports_every_level_with_no_failures_or_leaks(images, tmp_path):
    lines: list[str] = []
    config = BenchConfig(harnesses=["bash"], levels=[1, 2], rollouts=2, image=images["harness"], output_dir=tmp_path)

    report, paths = run_bench(config, progress=lines.append)

    assert report.totals.model_dump() == {"rollouts": 4, "failures": 0, "leaked": 0}
    assert sum("floor" in line and "c=" in line for line in lines) == 2
    assert sum("docker/bash/arena-bench/shared" in line for line in lines) == 2
    [config_report] = report.configs
    assert [level.level for level in config_report.levels] == [1, 2]
    for level in config_report.levels:
        assert level.completed == level.rollouts == 2
        assert level.failures == 0 and level.leaked == 0
        assert set(level.phases) == set(PHASES)
        assert level.phases["total"].n == 2 and level.phases["teardown"].n == 2
        assert level.cpu.containers_s is not None
        assert all(row["container"] for row in level.rows)
        assert leftovers(level.run) == []
    for entry in report.floor:
        assert entry.docker_run.failures == entry.docker_exec.failures == 0
        assert leftovers(entry.run) == []
    assert report.goals[0].overhead_ratio is not None
    assert BenchReport.model_validate_json(paths.json.read_text()).totals == report.totals
    assert "## docker/bash/arena-bench/shared" in paths.md.read_text()
    assert paths.png.read_bytes()[:4] == b"\x89PNG"
