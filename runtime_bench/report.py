"""The concurrency cost report: one JSON document, rendered as Markdown tables and a PNG plot.

`build_report` assembles the document (`runtime_bench.model.BenchReport`) from the measured pieces;
`render_markdown`, `render_plot` and `render_capacity_plot` read only that document, so a saved
`report.json` re-loads (`BenchReport.model_validate_json`) and re-renders. The goal ratios compare
each configuration (per harness, the stock and the lean docker path side by side) with the
`docker run` floor measured in the same run; the capacity table says, per harness, path and model
latency, what a rollout costs and how long a sweep of N rollouts would take on this machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from arena.errors import UsageError
from runtime_bench.config import PATH_TITLES
from runtime_bench.model import (
    BenchReport,
    Capacity,
    ConfigResult,
    FloorLevel,
    Goal,
    LevelResult,
    Meta,
    ReportPaths,
    Skipped,
    Summary,
    Totals,
)
from runtime_bench.stats import PHASES, best_level, goal_ratios

__all__ = [
    "build_report",
    "capacity_rows",
    "dominant_phase",
    "read_report",
    "render_capacity_plot",
    "render_markdown",
    "render_plot",
    "write_report",
]

PHASE_TITLES = {
    "boot": "boot",
    "setup": "setup",
    "agent_model": "agent: model",
    "agent_harness": "agent: harness",
    "finalize": "finalize",
    "scoring": "scoring",
    "teardown": "teardown",
    "total": "total",
    "overhead": "overhead (total − model)",
}
METHOD = (
    "Times are seconds, shown as p50 / p95 / max across a level's rollouts. `overhead` is a rollout's wall "
    "clock (boot start to container destroyed) minus its model time. Rollouts/s counts successful "
    "rollouts over the window from the first boot to the last container destroyed; `eval wall` adds "
    "vf-eval's own start-up (`eval start-up`: launch to first boot, a fixed cost per vf-eval) and shutdown. "
    "CPU-s per rollout adds the rollout containers (cgroups, sampled at 10 Hz), vf-eval and every process "
    "it reaped (docker CLI, tool servers) from its first rollout on, and the docker side from the first "
    "rollout on (machine-wide: other work on the host adds to it), divided by the rollouts; vf-eval's start-up CPU is in report.json "
    "(`cpu.eval_startup_s`). The docker side is a cpuacct cgroup the bench moves dockerd and containerd into, "
    "so every shim and runc call they start counts (the header says when that was not possible: then "
    "dockerd + containerd from /proc, without shims and runc), for rollouts and for the floor alike. "
    "Docker-side CPU-s per rollout is the docker side + the docker CLI calls vf-eval "
    "reaped (vf-eval's reaped CPU less its other children as last seen alive: an upper bound). The stock path "
    "is verifiers' docker runtime; the lean path is Arena's `LeanEnv` box over the Engine API, whose box "
    "starts before the trace's boot: a rollout's start and its boot count from its container's creation. "
    'The lean+pool path is the lean path with its warm pool (`[env] pool = "auto"`): a rollout starts when it '
    "claims its box and ends when it is scored, and its box's removal (`teardown`) runs in the background; the "
    "pool's boots count in the docker-side CPU from the first box created."
)
"""How the report's numbers are measured (printed under the header)."""
STEP_PHASES = ("boot", "setup", "agent_model", "agent_harness", "finalize", "scoring", "teardown")
"""The phases that add up to `total` (the candidates for "what dominates")."""


LevelT = TypeVar("LevelT", LevelResult, FloorLevel)


def _level(levels: Sequence[LevelT], level: int) -> LevelT | None:
    return next((entry for entry in levels if entry.level == level), None)


def dominant_phase(level: LevelResult) -> tuple[str, float] | None:
    """The step phase with the largest p50 at one level, and that p50."""
    measured = [
        (name, summary.p50) for name in STEP_PHASES if (summary := level.phases.get(name)) and summary.p50 is not None
    ]
    return max(measured, key=lambda item: item[1], default=None)


def _cpu_level(config: ConfigResult) -> LevelResult | None:
    """The level CPU goals read: 8 (both cores busy, most rollouts), else the highest measured."""
    return _level(config.levels, 8) or (config.levels[-1] if config.levels else None)


def _path(config: ConfigResult) -> str:
    return PATH_TITLES.get(config.runtime, config.runtime)


def capacity_rows(configs: Sequence[ConfigResult], sweep: int) -> list[Capacity]:
    """Per configuration: the best concurrency, what a rollout costs there, and a sweep's projected wall time."""
    rows = []
    for config in configs:
        best = best_level({level.level: level.throughput for level in config.levels})
        at = _level(config.levels, best[0]) if best else None
        peaks = [level.peak_mib.max for level in config.levels if level.peak_mib.max is not None]
        startup = at.startup_s if at else None
        rows.append(
            Capacity(
                label=config.label,
                harness=config.harness,
                path=_path(config),
                latency=config.latency,
                best_level=best[0] if best else None,
                best_throughput=best[1] if best else None,
                cpu_per_rollout=at.cpu.per_rollout_s if at else None,
                docker_cpu_per_rollout=at.cpu.docker_side_per_rollout_s if at else None,
                peak_mib=max(peaks) if peaks else None,
                startup_s=startup,
                sweep=sweep,
                projected_s=sweep / best[1] + (startup or 0.0) if best else None,
            )
        )
    return rows


def build_report(
    meta: Meta,
    floor: Sequence[FloorLevel],
    configs: Sequence[ConfigResult],
    skipped: Sequence[Skipped] = (),
) -> BenchReport:
    """The report document: metadata, floor per level, each configuration's levels, goals, capacity, totals."""
    floor_c1, floor_c8 = _level(floor, 1), _level(floor, 8)
    goals = []
    for config in configs:
        c1, c8, cpu_at = _level(config.levels, 1), _level(config.levels, 8), _cpu_level(config)
        overhead = c1.phases.get("overhead") if c1 else None
        ratios = goal_ratios(
            overhead.p50 if overhead else None,
            floor_c1.docker_run.wall.p50 if floor_c1 else None,
            c8.throughput if c8 else None,
            floor_c8.docker_run.throughput if floor_c8 else None,
            cpu_at.cpu.per_rollout_s if cpu_at else None,
            cpu_at.cpu.docker_side_per_rollout_s if cpu_at else None,
        )
        goals.append(
            Goal(
                label=config.label,
                harness=config.harness,
                path=_path(config),
                latency=config.latency,
                cpu_level=cpu_at.level if cpu_at else None,
                **ratios,
            )
        )
    levels = [level for config in configs for level in config.levels]
    failures = sum(level.failures for level in levels) + sum(
        f.docker_run.failures + f.docker_exec.failures for f in floor
    )
    return BenchReport(
        meta=meta,
        floor=list(floor),
        configs=list(configs),
        skipped=list(skipped),
        goals=goals,
        capacity=capacity_rows(configs, meta.sweep),
        totals=Totals(
            rollouts=sum(level.rollouts for level in levels),
            failures=failures,
            leaked=sum(level.leaked for level in levels) + sum(f.leaked for f in floor),
        ),
    )


def _s(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _triple(summary: Summary | None) -> str:
    if summary is None or not summary.n:
        return "–"
    return f"{_s(summary.p50)} / {_s(summary.p95)} / {_s(summary.max)}"


_PATH_ORDER = {"stock": 0, "lean": 1, "lean+pool": 2}
POOL_NOTE = (
    "A warm pool boots each rollout's box (create, start, workdir, a listener in its network namespace) ahead "
    "of demand, while vf-eval starts up and while earlier rollouts run, so a rollout's `boot` is a claim: one "
    "engine inspect (a box the engine no longer runs is removed, never handed out) and its egress proxy's start. "
    "Its box is removed in the background after it is scored (`teardown`, out of `total`), a few at a time. "
    "The boots and removals still cost CPU (counted above); they leave the rollout's wall clock, not the machine."
)
"""What the pool moves off the critical path (printed with the lean and lean+pool comparison)."""


def _family(harness: str) -> str:
    """The harness a lean one stands in for (`arena-bash` → `bash`), so the two paths sort side by side."""
    return harness.removeprefix("arena-")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"


def _ratio(value: float | None, met: bool | None, goal: str) -> str:
    if value is None:
        return f"not measured ({goal})"
    shown, threshold = round(value, 2), float(goal.split()[-1])
    if not met and (shown >= threshold if goal.startswith("≥") else shown <= threshold):
        # A figure that misses its goal must not print as the goal itself: round it away.
        shown = (math.floor if goal.startswith("≥") else math.ceil)(round(value * 100, 6)) / 100
    return f"{shown:.2f} ({goal}: {'met' if met else 'missed'})"


def render_markdown(report: BenchReport) -> str:
    """The report as Markdown: goals, floor, one table per configuration, failures and leaks."""
    meta = report.meta
    host = (
        f"Host: {meta.cpus} CPUs, {_s(meta.memory_gib, 1)} GiB, "
        f"Docker {meta.docker_version or '?'}, cgroup {meta.cgroup or '?'}; docker side: {meta.docker_side or '?'}. "
        f"Started {meta.started or '?'}, took {_s(meta.elapsed_s, 0)} s; "
        f"load average {meta.load_before or '?'} before, {meta.load_after or '?'} after; "
        f"CPU gauge {_s(meta.gauge_before_s)} s before, {_s(meta.gauge_after_s)} s after "
        f"(CPU-s of a fixed pure-Python loop: compare CPU figures across runs only at like gauges)."
    )
    latencies = ", ".join(f"{v:g}" for v in meta.latencies)
    policy = (
        f"Policy `{meta.model}` (scripted: identical across rollouts; it waits {latencies} s per model call, "
        f"asleep on the model server, so model time costs no CPU). "
        f"Levels {meta.levels}; a level runs max({meta.rollouts}, level) rollouts."
    )
    lines = [
        f"# Concurrency cost report: {meta.bench_id}",
        "",
        host,
        policy,
        "",
        METHOD,
        "",
        "## Goals per harness, stock and lean path side by side (against the `docker run` floor of this run)",
        "",
        "| harness | docker path | latency s | overhead c=1 ÷ docker run c=1 (≤ 1.5) | rollouts/s c=8 ÷ docker run/s c=8 (≥ 0.6) "
        "| CPU-s/rollout (≤ 0.8) | docker-side CPU-s/rollout (≤ 0.6) | dominant phase c=1 |",
        "| --- | --- | ---: | --- | --- | --- | --- | --- |",
    ]
    ordered = sorted(
        zip(report.goals, report.configs, strict=True),
        key=lambda gc: (_family(gc[0].harness), gc[0].latency, _PATH_ORDER.get(gc[0].path, 9), gc[0].harness),
    )
    for goal, config in ordered:
        c1 = _level(config.levels, 1)
        dominant = dominant_phase(c1) if c1 else None
        at = f" (c={goal.cpu_level})" if goal.cpu_level not in (None, 8) else ""
        lines.append(
            f"| {goal.harness or goal.label} | {goal.path or '?'} | {goal.latency:g} | "
            f"{_ratio(goal.overhead_ratio, goal.overhead_met, '≤ 1.5')} | "
            f"{_ratio(goal.throughput_ratio, goal.throughput_met, '≥ 0.6')} | "
            f"{_ratio(goal.cpu_per_rollout, goal.cpu_met, '≤ 0.8')}{at} | "
            f"{_ratio(goal.docker_cpu_per_rollout, goal.docker_cpu_met, '≤ 0.6')}{at} | "
            f"{f'{PHASE_TITLES[dominant[0]]} {dominant[1]:.2f} s' if dominant else '–'} |"
        )
    if report.capacity:
        lines += [
            "",
            f"## Capacity: what a rollout costs, and a sweep of {report.capacity[0].sweep} rollouts on this machine",
            "",
            "Best c is the measured concurrency with the highest throughput; CPU figures are at that c; "
            "peak MiB is the largest one-rollout container peak over every level; projected wall = "
            "N ÷ best rollouts/s + vf-eval start-up. Phases stacked per concurrency: capacity.png.",
            "",
            "| harness | docker path | latency s | best c | rollouts/s | CPU-s/rollout | docker-side CPU-s/rollout "
            "| peak MiB/rollout | start-up s | projected wall |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in sorted(
            report.capacity, key=lambda r: (_family(r.harness), r.latency, _PATH_ORDER.get(r.path, 9), r.harness)
        ):
            lines.append(
                f"| {row.harness} | {row.path} | {row.latency:g} | {row.best_level or '–'} | {_s(row.best_throughput)} | "
                f"{_s(row.cpu_per_rollout)} | {_s(row.docker_cpu_per_rollout)} | {_s(row.peak_mib, 0)} | "
                f"{_s(row.startup_s, 1)} | {_duration(row.projected_s)} |"
            )
    lines += _pool_lines(report)
    if report.floor:
        lines += [
            "",
            "## Floor: `docker run --rm IMAGE true` and `docker exec C true`",
            "",
            "| c | jobs | docker run s | docker run jobs/s | docker run CPU-s/job | docker exec s | docker exec jobs/s | failures |",
            "| ---: | ---: | --- | ---: | ---: | --- | ---: | ---: |",
        ]
        for entry in report.floor:
            run, exe = entry.docker_run, entry.docker_exec
            lines.append(
                f"| {entry.level} | {run.jobs} | {_triple(run.wall)} | {_s(run.throughput)} | "
                f"{_s(run.cpu_per_job_s)} | {_triple(exe.wall)} | {_s(exe.throughput)} | "
                f"{run.failures + exe.failures} |"
            )
    for config in report.configs:
        lines += [
            "",
            f"## {config.label}",
            "",
            f"Docker path: {_path(config)}. Model latency {config.latency:g} s. Image `{config.image or 'runtime default'}`.",
            "",
            "| c | rollouts | failed | leaked | "
            + " | ".join(PHASE_TITLES[p] for p in PHASES)
            + " | rollouts/s | eval wall s | eval start-up s | CPU-s/rollout | docker-side CPU-s/rollout | peak MiB |",
            "| ---: | ---: | ---: | ---: | "
            + " | ".join("---" for _ in PHASES)
            + " | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for level in config.levels:
            lines.append(
                f"| {level.level} | {level.rollouts} | {level.failures} | {level.leaked} | "
                + " | ".join(_triple(level.phases.get(p)) for p in PHASES)
                + f" | {_s(level.throughput)} | {_s(level.eval_wall_s, 1)} | {_s(level.startup_s, 1)} | "
                f"{_s(level.cpu.per_rollout_s)} | {_s(level.cpu.docker_side_per_rollout_s)} | {_triple(level.peak_mib)} |"
            )
    details = [
        (config.label, level) for config in report.configs for level in config.levels if level.failures or level.leaked
    ]
    lines += ["", "## Failures and leaks", ""]
    if not details and not report.totals.failures:
        lines.append(f"None: {report.totals.rollouts} rollouts, 0 failed, 0 leaked containers.")
    for label, level in details:
        lines.append(f"- {label} c={level.level}: {level.failures} failed, {level.leaked} leaked (reaped)")
        lines += [f"  - {f.task}: stop={f.stop} {f.error}" for f in level.failure_details]
        if level.leaked_names:
            lines.append(f"  - leaked: {', '.join(level.leaked_names)}")
    for entry in report.floor:
        for kind, job in (("docker_run", entry.docker_run), ("docker_exec", entry.docker_exec)):
            if job.failures:
                lines.append(f"- floor {kind} c={entry.level}: {job.failures} failed: {job.errors}")
    if report.skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- {s.runtime}/{s.harness}: {s.reason}" for s in report.skipped]
    return "\n".join(lines) + "\n"


def _pool_lines(report: BenchReport) -> list[str]:
    """The lean path without and with the warm pool, per harness and level: boot, teardown and overhead p50."""
    pooled = [c for c in report.configs if _path(c) == "lean+pool"]
    if not pooled:
        return []
    lines = [
        "",
        "## What the warm pool moves off the critical path",
        "",
        POOL_NOTE,
        "",
        "| harness | latency s | c | lean boot p50 | lean+pool boot p50 | lean teardown p50 | lean+pool teardown p50 (background) "
        "| lean overhead p50 | lean+pool overhead p50 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for config in pooled:
        lean = next(
            (
                c
                for c in report.configs
                if _path(c) == "lean"
                and c.harness == config.harness
                and c.latency == config.latency
                and c.toolset == config.toolset
            ),
            None,
        )
        for level in config.levels:
            base = _level(lean.levels, level.level) if lean else None

            def p50(entry: LevelResult | None, phase: str) -> str:
                summary = entry.phases.get(phase) if entry else None
                return _s(summary.p50 if summary else None)

            lines.append(
                f"| {config.harness} | {config.latency:g} | {level.level} | {p50(base, 'boot')} | {p50(level, 'boot')} | "
                f"{p50(base, 'teardown')} | {p50(level, 'teardown')} | {p50(base, 'overhead')} | {p50(level, 'overhead')} |"
            )
    return lines


def render_plot(report: BenchReport, path: Path) -> None:
    """Wall clock per rollout (p50) and throughput against concurrency, each configuration and the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (wall_ax, rate_ax) = plt.subplots(1, 2, figsize=(12, 4.8))
    for config in report.configs:
        walls = [
            (lv.level, total.p50) for lv in config.levels if (total := lv.phases.get("total")) and total.p50 is not None
        ]
        wall_ax.plot([x for x, _ in walls], [y for _, y in walls], marker="o", label=config.label)
        rated = [(lv.level, lv.throughput) for lv in config.levels if lv.throughput]
        rate_ax.plot([x for x, _ in rated], [y for _, y in rated], marker="o", label=config.label)
    for kind, style in (("docker_run", "k--"), ("docker_exec", "k:")):
        jobs = [(f.level, f.docker_run if kind == "docker_run" else f.docker_exec) for f in report.floor]
        measured = [(level, job) for level, job in jobs if job.wall.p50 is not None]
        if measured:
            label = "floor: docker run --rm true" if kind == "docker_run" else "floor: docker exec true"
            wall_ax.plot(
                [x for x, _ in measured], [job.wall.p50 for _, job in measured], style, marker="x", label=label
            )
            rate_ax.plot(
                [x for x, _ in measured], [job.throughput or 0 for _, job in measured], style, marker="x", label=label
            )
    levels = report.meta.levels
    for ax, title, unit in (
        (wall_ax, "wall clock per rollout / job (p50)", "seconds"),
        (rate_ax, "throughput", "rollouts (jobs) per second"),
    ):
        ax.set_xscale("log", base=2)
        if levels:
            ax.set_xticks(levels, [str(level) for level in levels])
        ax.set_yscale("log")
        ax.set_xlabel("concurrency")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    wall_ax.legend(fontsize=7)
    fig.suptitle(f"Concurrency cost: {report.meta.bench_id}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_capacity_plot(report: BenchReport, path: Path) -> None:
    """Where a rollout's time goes: its phases (mean seconds) stacked per concurrency, one panel per
    configuration (harness × docker path × model latency)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = report.configs or []
    columns = min(3, max(1, len(configs)))
    rows = max(1, -(-len(configs) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.8 * rows), squeeze=False)
    colours = plt.get_cmap("tab10")
    for index, config in enumerate(configs):
        ax = axes[index // columns][index % columns]
        positions = list(range(len(config.levels)))
        bottom = [0.0] * len(config.levels)
        for number, phase in enumerate(STEP_PHASES):
            heights = [(level.phases.get(phase) or Summary()).mean or 0.0 for level in config.levels]
            ax.bar(positions, heights, bottom=bottom, color=colours(number), label=PHASE_TITLES[phase])
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        ax.set_xticks(positions, [f"c={level.level}" for level in config.levels])
        ax.set_ylabel("seconds per rollout (mean)")
        ax.set_title(f"{config.harness} · {_path(config)} · latency {config.latency:g} s", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    for index in range(len(configs), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=len(STEP_PHASES), fontsize=8)
    fig.suptitle(f"Where a rollout's time goes: {report.meta.bench_id}")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(report: BenchReport, out_dir: Path) -> ReportPaths:
    """Write report.json, report.md, report.png and capacity.png into `out_dir`; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(
        json=out_dir / "report.json",
        md=out_dir / "report.md",
        png=out_dir / "report.png",
        capacity_png=out_dir / "capacity.png",
    )
    paths.json.write_text(report.model_dump_json(indent=2) + "\n")
    paths.md.write_text(render_markdown(report))
    render_plot(report, paths.png)
    render_capacity_plot(report, paths.capacity_png)
    return paths


def read_report(path: Path) -> BenchReport:
    """A saved report.json.

    Raises:
        UsageError: the file cannot be read or is not a bench report.
    """
    try:
        return BenchReport.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise UsageError(
            f"{path} is not a bench report.json ({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})"
        ) from None
