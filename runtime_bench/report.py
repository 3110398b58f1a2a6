"""The concurrency cost report: one JSON document, rendered as Markdown tables and a PNG plot.

`build_report` assembles the document from the measured pieces; `render_markdown` and
`render_plot` read only that document, so a saved `report.json` can be re-rendered. The goal
ratios compare each configuration with the `docker run` floor measured in the same run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runtime_bench.stats import PHASES, goal_ratios

__all__ = ["build_report", "dominant_phase", "render_markdown", "render_plot", "write_report"]

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
    "it reaped (docker CLI, tool servers) from its first rollout on, and dockerd + containerd (machine-wide: "
    "other work on the host adds to it), divided by the rollouts; vf-eval's start-up CPU is in report.json "
    "(`cpu.eval_startup_s`). containerd shims and runc are not counted, for rollouts or for the floor."
)
"""How the report's numbers are measured (printed under the header)."""
STEP_PHASES = ("boot", "setup", "agent_model", "agent_harness", "finalize", "scoring", "teardown")
"""The phases that add up to `total` (the candidates for "what dominates")."""


def _level(levels: Sequence[Mapping[str, Any]], level: int) -> Mapping[str, Any] | None:
    return next((entry for entry in levels if entry["level"] == level), None)


def dominant_phase(level: Mapping[str, Any]) -> tuple[str, float] | None:
    """The step phase with the largest p50 at one level, and that p50."""
    phases = level.get("phases") or {}
    best = max(
        ((name, (phases.get(name) or {}).get("p50")) for name in STEP_PHASES),
        key=lambda item: item[1] if item[1] is not None else -1.0,
        default=None,
    )
    return best if best and best[1] is not None else None


def build_report(
    meta: Mapping[str, Any],
    floor: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, Any]],
    skipped: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The report document: metadata, floor per level, each configuration's levels, goals, totals.

    `configs` entries are `{label, runtime, harness, environment, toolset, image, levels: [...]}`,
    each level as returned by `runtime_bench.evals.run_level`.
    """
    floor_c1, floor_c8 = _level(floor, 1), _level(floor, 8)
    goals = []
    for config in configs:
        c1, c8 = _level(config["levels"], 1), _level(config["levels"], 8)
        ratios = goal_ratios(
            (c1 or {}).get("phases", {}).get("overhead", {}).get("p50"),
            (floor_c1 or {}).get("docker_run", {}).get("wall", {}).get("p50"),
            (c8 or {}).get("throughput"),
            (floor_c8 or {}).get("docker_run", {}).get("throughput"),
        )
        goals.append({"label": config["label"], **ratios})
    failures = sum(level["failures"] for config in configs for level in config["levels"])
    failures += sum(f[kind]["failures"] for f in floor for kind in ("docker_run", "docker_exec"))
    leaked = sum(level["leaked"] for config in configs for level in config["levels"])
    leaked += sum(f.get("leaked", 0) for f in floor)
    return {
        "meta": dict(meta),
        "floor": list(floor),
        "configs": list(configs),
        "skipped": list(skipped),
        "goals": goals,
        "totals": {
            "rollouts": sum(level["rollouts"] for config in configs for level in config["levels"]),
            "failures": failures,
            "leaked": leaked,
        },
    }


def _s(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _triple(summary: Mapping[str, Any] | None) -> str:
    summary = summary or {}
    if not summary.get("n"):
        return "–"
    return f"{_s(summary['p50'])} / {_s(summary['p95'])} / {_s(summary['max'])}"


def _ratio(value: float | None, met: bool | None, goal: str) -> str:
    if value is None:
        return f"not measured ({goal})"
    return f"{value:.2f} ({goal}: {'met' if met else 'missed'})"


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: goals, floor, one table per configuration, failures and leaks."""
    meta = report["meta"]
    host = (
        f"Host: {meta.get('cpus')} CPUs, {_s(meta.get('memory_gib'), 1)} GiB, "
        f"Docker {meta.get('docker_version', '?')}, cgroup {meta.get('cgroup', '?')}. "
        f"Started {meta.get('started', '?')}, took {_s(meta.get('elapsed_s'), 0)} s; "
        f"load average {meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after."
    )
    policy = (
        f"Policy `{meta.get('model')}` (scripted: model time is near zero and identical across rollouts). "
        f"Levels {meta.get('levels')}; a level runs max({meta.get('rollouts')}, level) rollouts."
    )
    lines = [
        f"# Concurrency cost report: {meta.get('bench_id', '')}",
        "",
        host,
        policy,
        "",
        METHOD,
        "",
        "## Goals (against the `docker run` floor of this run)",
        "",
        "| configuration | overhead c=1 ÷ docker run c=1 (≤ 1.5) | rollouts/s c=8 ÷ docker run/s c=8 (≥ 0.7) | dominant phase c=1 |",
        "| --- | --- | --- | --- |",
    ]
    for goal, config in zip(report["goals"], report["configs"], strict=True):
        c1 = _level(config["levels"], 1)
        dominant = dominant_phase(c1) if c1 else None
        lines.append(
            f"| {goal['label']} | {_ratio(goal['overhead_ratio'], goal['overhead_met'], '≤ 1.5')} | "
            f"{_ratio(goal['throughput_ratio'], goal['throughput_met'], '≥ 0.7')} | "
            f"{f'{PHASE_TITLES[dominant[0]]} {dominant[1]:.2f} s' if dominant else '–'} |"
        )
    if report["floor"]:
        lines += [
            "",
            "## Floor: `docker run --rm IMAGE true` and `docker exec C true`",
            "",
            "| c | jobs | docker run s | docker run jobs/s | docker run CPU-s/job | docker exec s | docker exec jobs/s | failures |",
            "| ---: | ---: | --- | ---: | ---: | --- | ---: | ---: |",
        ]
        for entry in report["floor"]:
            run, exe = entry["docker_run"], entry["docker_exec"]
            lines.append(
                f"| {entry['level']} | {run['jobs']} | {_triple(run['wall'])} | {_s(run['throughput'])} | "
                f"{_s(run.get('cpu_per_job_s'))} | {_triple(exe['wall'])} | {_s(exe['throughput'])} | "
                f"{run['failures'] + exe['failures']} |"
            )
    for config in report["configs"]:
        lines += [
            "",
            f"## {config['label']}",
            "",
            f"Image `{config.get('image') or 'runtime default'}`.",
            "",
            "| c | rollouts | failed | leaked | "
            + " | ".join(PHASE_TITLES[p] for p in PHASES)
            + " | rollouts/s | eval wall s | eval start-up s | CPU-s/rollout | peak MiB |",
            "| ---: | ---: | ---: | ---: | " + " | ".join("---" for _ in PHASES) + " | ---: | ---: | ---: | ---: | --- |",
        ]
        for level in config["levels"]:
            phases = level["phases"]
            lines.append(
                f"| {level['level']} | {level['rollouts']} | {level['failures']} | {level['leaked']} | "
                + " | ".join(_triple(phases.get(p)) for p in PHASES)
                + f" | {_s(level['throughput'])} | {_s(level['eval_wall_s'], 1)} | {_s(level.get('startup_s'), 1)} | "
                f"{_s(level['cpu'].get('per_rollout_s'))} | {_triple(level.get('peak_mib'))} |"
            )
    details = [
        (config["label"], level)
        for config in report["configs"]
        for level in config["levels"]
        if level["failures"] or level["leaked"]
    ]
    lines += ["", "## Failures and leaks", ""]
    if not details and not report["totals"]["failures"]:
        lines.append(f"None: {report['totals']['rollouts']} rollouts, 0 failed, 0 leaked containers.")
    for label, level in details:
        lines.append(f"- {label} c={level['level']}: {level['failures']} failed, {level['leaked']} leaked (reaped)")
        lines += [f"  - {f['task']}: stop={f['stop']} {f['error']}" for f in level["failure_details"]]
        if level["leaked_names"]:
            lines.append(f"  - leaked: {', '.join(level['leaked_names'])}")
    for entry in report["floor"]:
        for kind in ("docker_run", "docker_exec"):
            if entry[kind]["failures"]:
                lines.append(f"- floor {kind} c={entry['level']}: {entry[kind]['failures']} failed: {entry[kind]['errors']}")
    if report["skipped"]:
        lines += ["", "## Skipped", ""]
        lines += [f"- {s['runtime']}/{s['harness']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def render_plot(report: Mapping[str, Any], path: Path) -> None:
    """Wall clock per rollout (p50) and throughput against concurrency, each configuration and the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (wall_ax, rate_ax) = plt.subplots(1, 2, figsize=(12, 4.8))
    for config in report["configs"]:
        levels = [lv for lv in config["levels"] if lv["phases"]["total"]["p50"] is not None]
        xs = [lv["level"] for lv in levels]
        wall_ax.plot(xs, [lv["phases"]["total"]["p50"] for lv in levels], marker="o", label=config["label"])
        rated = [lv for lv in config["levels"] if lv["throughput"]]
        rate_ax.plot([lv["level"] for lv in rated], [lv["throughput"] for lv in rated], marker="o", label=config["label"])
    for kind, style in (("docker_run", "k--"), ("docker_exec", "k:")):
        floor = [f for f in report["floor"] if f[kind]["wall"]["p50"] is not None]
        if floor:
            label = "floor: docker run --rm true" if kind == "docker_run" else "floor: docker exec true"
            wall_ax.plot([f["level"] for f in floor], [f[kind]["wall"]["p50"] for f in floor], style, marker="x", label=label)
            rate_ax.plot([f["level"] for f in floor], [f[kind]["throughput"] or 0 for f in floor], style, marker="x", label=label)
    levels = report["meta"].get("levels") or []
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
    fig.suptitle(f"Concurrency cost: {report['meta'].get('bench_id', '')}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: Mapping[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write report.json, report.md and report.png into `out_dir`; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "report.json", "md": out_dir / "report.md", "png": out_dir / "report.png"}
    paths["json"].write_text(json.dumps(report, indent=2, default=str) + "\n")
    paths["md"].write_text(render_markdown(report))
    render_plot(report, paths["png"])
    return paths
