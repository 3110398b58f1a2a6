"""The concurrency cost report: its JSON structure, Markdown tables and PNG plot, from fixed numbers."""

import pytest

from runtime_bench.model import BenchReport, ConfigResult, FloorLevel, LevelResult, Meta, Skipped
from runtime_bench.report import (
    build_report,
    dominant_phase,
    render_capacity_plot,
    render_markdown,
    render_plot,
    write_report,
)
from runtime_bench.stats import phase_summaries, rollout_row, summarize


def _level(
    level: int, harness_s: float, rate: float, failures: int = 0, leaked: int = 0, cpu: float = 3.0, docker: float = 1.5
) -> LevelResult:
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
    return LevelResult.model_validate(
        {
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
            "cpu": {"per_rollout_s": cpu, "docker_side_per_rollout_s": docker},
            "startup_s": 8.0,
            "peak_mib": summarize([80.0] * level),
            "rows": rows,
        }
    )


def _floor(level: int, p50: float, rate: float) -> FloorLevel:
    job = {
        "jobs": level,
        "wall": summarize([p50] * level),
        "throughput": rate,
        "failures": 0,
        "errors": [],
        "cpu_per_job_s": 0.25,
    }
    return FloorLevel.model_validate(
        {"level": level, "docker_run": job, "docker_exec": {**job, "wall": summarize([p50 / 5] * level)}, "leaked": 0}
    )


def _report(failures: int = 0, leaked: int = 0) -> BenchReport:
    config = ConfigResult(
        label="docker/bash/arena-bench/shared",
        runtime="docker",
        harness="bash",
        image="arena/harness:latest",
        levels=[_level(1, 3.0, 0.2), _level(8, 6.0, 0.5, failures=failures, leaked=leaked)],
    )
    lean = ConfigResult(
        label="docker-lean/arena-bash/arena-bench/shared@2s",
        runtime="docker-lean",
        latency=2.0,
        harness="arena-bash",
        image="arena/harness:latest",
        levels=[
            _level(1, 0.1, 0.4, cpu=0.5, docker=0.2),
            _level(8, 0.2, 4.0, cpu=0.7, docker=0.3),
            _level(32, 0.3, 3.0, cpu=0.9, docker=0.4),
        ],
    )
    meta = Meta(
        bench_id="bench-test", cpus=2, levels=[1, 8, 32], rollouts=1, model="arena/bench", latencies=[0, 2], sweep=1000
    )
    return build_report(
        meta,
        [_floor(1, 0.4, 2.5), _floor(8, 1.6, 5.0)],
        [config, lean],
        [Skipped(runtime="subprocess", harness="codex", reason="codex refuses the subprocess runtime")],
    )


def test_the_report_holds_goals_totals_and_every_level():
    report = _report()
    assert set(report.model_dump()) == {"meta", "floor", "configs", "skipped", "goals", "totals", "capacity"}
    goal, lean = report.goals
    # overhead at c=1: 4.95 s wall (boot start to destroy) - 0.05 s model = 4.95 s; floor 0.4 s
    assert goal.overhead_ratio == (5.0 - 0.05) / 0.4
    assert goal.overhead_met is False
    assert goal.throughput_ratio == 0.5 / 5.0 and goal.throughput_met is False
    assert (goal.path, goal.cpu_level, goal.cpu_per_rollout, goal.cpu_met, goal.docker_cpu_met) == (
        "stock",
        8,
        3.0,
        False,
        False,
    )
    assert (lean.path, lean.latency, lean.harness) == ("lean", 2.0, "arena-bash")
    assert lean.throughput_ratio == 4.0 / 5.0 and lean.throughput_met is True
    assert (lean.cpu_per_rollout, lean.cpu_met, lean.docker_cpu_per_rollout, lean.docker_cpu_met) == (
        0.7,
        True,
        0.3,
        True,
    )
    assert report.totals.model_dump() == {"rollouts": 9 + 41, "failures": 0, "leaked": 0}
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


def test_the_capacity_row_is_the_best_concurrency_and_a_projected_sweep():
    stock, lean = _report().capacity
    assert (lean.best_level, lean.best_throughput, lean.cpu_per_rollout, lean.peak_mib) == (8, 4.0, 0.7, 80.0)
    assert lean.projected_s == 1000 / 4.0 + 8.0
    assert (stock.best_level, stock.path, stock.latency) == (8, "stock", 0.0)


def test_markdown_has_the_goal_capacity_floor_and_per_level_tables():
    text = render_markdown(_report())
    assert (
        "| arena-bash | lean | 2 | 5.13 (≤ 1.5: missed) | 0.80 (≥ 0.6: met) | 0.70 (≤ 0.8: met) | 0.30 (≤ 0.6: met) "
        "| boot 1.00 s |"
    ) in text
    assert (
        "| bash | stock | 0 | 12.38 (≤ 1.5: missed) | 0.10 (≥ 0.6: missed) | 3.00 (≤ 0.8: missed) | 1.50 (≤ 0.6: missed) "
        "| agent: harness 3.00 s |"
    ) in text
    # side by side: verifiers' bash on the stock path, then its lean stand-in
    assert text.index("| bash | stock | 0 | 12.38") < text.index("| arena-bash | lean | 2 | 5.13")
    assert "| arena-bash | lean | 2 | 8 | 4.00 | 0.70 | 0.30 | 80 | 8.0 | 4 min 18 s |" in text
    assert "| 1 | 1 | 0.40 / 0.40 / 0.40 | 2.50 | 0.25 | 0.08 / 0.08 / 0.08 | 2.50 | 0 |" in text
    assert "| 8 | 8 | 0 | 0 | 1.00 / 1.00 / 1.00 |" in text
    assert "| 3.00 | 1.50 | 80.00 / 80.00 / 80.00 |" in text  # CPU-s and docker-side CPU-s per rollout
    assert "Docker path: lean. Model latency 2 s." in text
    assert "it waits 0, 2 s per model call" in text
    assert "None: 50 rollouts, 0 failed, 0 leaked containers." in text
    assert "- subprocess/codex: codex refuses the subprocess runtime" in text


@pytest.mark.slow
def test_the_plots_are_pngs(tmp_path):
    path, phases = tmp_path / "plot.png", tmp_path / "capacity.png"
    render_plot(_report(), path)
    render_capacity_plot(_report(), phases)
    assert path.read_bytes()[:8] == phases.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_capacity_plot_stacks_every_step_phase_per_concurrency(monkeypatch, tmp_path):
    import matplotlib.axes

    bars: list[tuple[str, list[float]]] = []
    real = matplotlib.axes.Axes.bar

    def spy(self, x, height, *args, **kwargs):
        bars.append((kwargs.get("label"), list(height)))
        return real(self, x, height, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", spy)
    render_capacity_plot(_report(), tmp_path / "capacity.png")
    labels = [label for label, _ in bars]
    assert labels == 2 * ["boot", "setup", "agent: model", "agent: harness", "finalize", "scoring", "teardown"]
    # the lean panel: three levels, boot 1.0 s each (fixture), harness 0.1 / 0.2 / 0.3 s
    assert bars[7] == ("boot", [1.0, 1.0, 1.0])
    assert bars[10] == ("agent: harness", pytest.approx([0.1, 0.2, 0.3]))


@pytest.mark.slow
def test_write_report_writes_json_markdown_and_png_that_re_render_the_same(tmp_path):
    report = _report()
    paths = write_report(report, tmp_path / "out")
    assert {p.name for p in paths} == {"report.json", "report.md", "report.png", "capacity.png"}
    saved = BenchReport.model_validate_json(paths.json.read_text())
    assert render_markdown(saved) == paths.md.read_text()


def test_a_goal_figure_just_missing_its_goal_never_prints_as_the_goal():
    from runtime_bench.report import _ratio

    assert _ratio(0.598, False, "≥ 0.6") == "0.59 (≥ 0.6: missed)"
    assert _ratio(1.502, False, "≤ 1.5") == "1.51 (≤ 1.5: missed)"
    assert _ratio(0.8, True, "≤ 0.8") == "0.80 (≤ 0.8: met)"
    assert _ratio(2.524, False, "≤ 0.8") == "2.52 (≤ 0.8: missed)"  # far from the goal: ordinary rounding


@pytest.mark.slow
def test_a_saved_report_re_renders_from_its_json_alone_with_goals_and_capacity_recomputed(tmp_path, capsys):
    from runtime_bench.cli import main

    saved = _report().model_dump(mode="json")
    saved["capacity"], saved["goals"] = [], []  # a report saved before the capacity table existed
    path = tmp_path / "report.json"
    path.write_text(__import__("json").dumps(saved))

    assert main(["--render", str(path)]) == 0

    text = (tmp_path / "report.md").read_text()
    assert text == render_markdown(_report())
    assert (tmp_path / "capacity.png").read_bytes()[:4] == b"\x89PNG"
    assert "report.md" in capsys.readouterr().out


def test_rendering_what_is_not_a_report_exits_2_in_words(tmp_path, capsys):
    from runtime_bench.cli import main

    (tmp_path / "other.json").write_text('{"meta": {}}')
    assert main(["--render", str(tmp_path / "other.json")]) == 2
    assert main(["--render", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "is not a bench report.json" in err and "cannot read" in err and "Traceback" not in err


def test_the_header_gives_the_host_s_cpu_gauge_before_and_after_the_run():
    report = _report()
    gauged = report.model_copy(
        update={"meta": report.meta.model_copy(update={"gauge_before_s": 0.412, "gauge_after_s": 0.697})}
    )
    assert "CPU gauge 0.41 s before, 0.70 s after" in render_markdown(gauged)
    assert "CPU gauge – s before, – s after" in render_markdown(report)  # a report saved before the gauge existed


def test_the_gauge_is_the_cpu_of_a_fixed_loop_so_more_work_costs_more(monkeypatch):
    from runtime_bench import runner

    one = runner.cpu_gauge()
    monkeypatch.setattr(runner, "GAUGE_LOOP", runner.GAUGE_LOOP * 4)
    assert 0 < one < runner.cpu_gauge()
