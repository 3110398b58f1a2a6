"""The concurrency cost report: its JSON structure, Markdown tables and PNG plot, from fixed numbers."""

from runtime_bench.model import BenchReport, ConfigResult, FloorLevel, LevelResult, Meta, Skipped
from runtime_bench.report import (
    build_report,
    dominant_phase,
    render_markdown,
    render_plot,
    write_report,
)
from runtime_bench.stats import phase_summaries, rollout_row, summarize


def _level(level: int, harness_s: float, rate: float, failures: int = 0, leaked: int = 0) -> LevelResult:
    rows = []
    for i in range(level):
        start = 1000.0 + i
        timing = {
            "boot": {"start": start, "end": start + 1.0},
            "setup": {"start": start + 1.0, "end": start + 1.5},
            "agent": {
                "start": start + 1.5,
                "end": start + 1.5 + harness_s + 0.05,
                "model": {"duration": 0.05},
                "harness": {"duration": harness_s},
            },
            "finalize": {"start": start + 1.55 + harness_s, "end": start + 1.55 + harness_s},
            "scoring": {"start": start + 1.55 + harness_s, "end": start + 1.65 + harness_s},
        }
        rows.append(rollout_row(timing, destroyed_at=start + 2.0 + harness_s))
    return LevelResult.model_validate({
        "level": level,
        "rollouts": level,
        "completed": level,
        "failures": failures,
        "failure_details": [{"task": "bench#0", "stop": "error", "error": "boom"}] * failures,
        "leaked": leaked,
        "leaked_names": ["vf-abc"] * leaked,
        "phases": phase_summaries(rows),
        "throughput": rate,
        "eval_wall_s": 20.0,
        "cpu": {"per_rollout_s": 3.0},
        "peak_mib": summarize([80.0] * level),
        "rows": rows,
    })


def _floor(level: int, p50: float, rate: float) -> FloorLevel:
    job = {"jobs": level, "wall": summarize([p50] * level), "throughput": rate, "failures": 0, "errors": [], "cpu_per_job_s": 0.25}
    return FloorLevel.model_validate(
        {"level": level, "docker_run": job, "docker_exec": {**job, "wall": summarize([p50 / 5] * level)}, "leaked": 0}
    )


def _report(failures: int = 0, leaked: int = 0) -> BenchReport:
    config = ConfigResult(
        label="docker/bash/arena-bench/shared",
        image="arena/harness:latest",
        levels=[_level(1, 3.0, 0.2), _level(8, 6.0, 0.5, failures=failures, leaked=leaked)],
    )
    meta = Meta(bench_id="bench-test", cpus=2, levels=[1, 8], rollouts=1, model="arena/bench")
    return build_report(meta, [_floor(1, 0.4, 2.5), _floor(8, 1.6, 5.0)], [config], [
        Skipped(runtime="subprocess", harness="codex", reason="codex refuses the subprocess runtime")
    ])


def test_the_report_holds_goals_totals_and_every_level():
    report = _report()
    assert set(report.model_dump()) == {"meta", "floor", "configs", "skipped", "goals", "totals"}
    [goal] = report.goals
    # overhead at c=1: 4.95 s wall (boot start to destroy) - 0.05 s model = 4.95 s; floor 0.4 s
    assert goal.overhead_ratio == (5.0 - 0.05) / 0.4
    assert goal.overhead_met is False
    assert goal.throughput_ratio == 0.5 / 5.0 and goal.throughput_met is False
    assert report.totals.model_dump() == {"rollouts": 9, "failures": 0, "leaked": 0}
    assert BenchReport.model_validate_json(report.model_dump_json()) == report  # a saved report re-loads as is


def test_failures_and_leaks_are_counted_and_listed():
    report = _report(failures=2, leaked=1)
    assert report.totals.failures == 2 and report.totals.leaked == 1
    text = render_markdown(report)
    assert "c=8: 2 failed, 1 leaked (reaped)" in text
    assert "bench#0: stop=error boom" in text
    assert "leaked: vf-abc" in text


def test_the_dominant_phase_is_the_largest_step_phase_by_p50():
    assert dominant_phase(_level(1, 3.0, 0.2)) == ("agent_harness", 3.0)


def test_markdown_has_the_goal_floor_and_per_level_tables():
    text = render_markdown(_report())
    assert "| docker/bash/arena-bench/shared | 12.38 (≤ 1.5: missed) | 0.10 (≥ 0.7: missed) | agent: harness 3.00 s |" in text
    assert "| 1 | 1 | 0.40 / 0.40 / 0.40 | 2.50 | 0.25 | 0.08 / 0.08 / 0.08 | 2.50 | 0 |" in text
    assert "| 8 | 8 | 0 | 0 | 1.00 / 1.00 / 1.00 |" in text
    assert "None: 9 rollouts, 0 failed, 0 leaked containers." in text
    assert "- subprocess/codex: codex refuses the subprocess runtime" in text


def test_the_plot_is_a_png(tmp_path):
    path = tmp_path / "plot.png"
    render_plot(_report(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_report_writes_json_markdown_and_png_that_re_render_the_same(tmp_path):
    report = _report()
    paths = write_report(report, tmp_path / "out")
    assert {p.name for p in paths} == {"report.json", "report.md", "report.png"}
    saved = BenchReport.model_validate_json(paths.json.read_text())
    assert render_markdown(saved) == paths.md.read_text()
