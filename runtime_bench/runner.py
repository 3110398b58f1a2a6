"""Run a benchmark end to end: check prerequisites, serve the policy, run every level, write the report.

Levels run in ascending order; at each level the floor is measured first and then every
configuration, so a level's numbers share the machine's state. One model server runs per model
latency (`arena.server`'s `latency`: each turn waits that long, asleep) (the host may be busy with other
work; the report records the load average). Every run's containers are looked up by label when
it ends and reaped if any survived; a leak is reported and makes the bench fail.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from arena.engine import docker_client, image_exists
from arena.errors import ArenaError, PrerequisiteError
from arena.policies import PolicyResolver
from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, CallTool, RunShell
from arena.reaper import leftovers, reap
from arena.server import start_in_thread
from runtime_bench import docker_side
from runtime_bench.config import BENCH_MODEL, Combo, Plan
from runtime_bench.evals import run_level
from runtime_bench.floor import measure_floor
from runtime_bench.model import BenchReport, ConfigResult, FloorLevel, LevelResult, Meta, ReportPaths
from runtime_bench.report import build_report, write_report

__all__ = ["BENCH_SCRIPT", "check_prerequisites", "run_bench"]

BENCH_SCRIPT = ScriptedPolicy(
    [
        RunShell("echo arena-bench-ok > bench.txt"),
        CallTool("stamp", {"text": "bench"}),
        Answer("DONE"),
    ]
)
"""The fixed behaviour every bench rollout plays: one shell command, one MCP call, an answer."""

Progress = Callable[[str], None]


def check_prerequisites(plan: Plan) -> None:
    """Fail fast, before anything starts, with what is missing and how to provide it.

    Raises:
        PrerequisiteError: a key, engine, image or environment the run needs is missing.
    """
    if any(combo.runtime == "prime" for combo in plan.combos) and not os.environ.get("PRIME_API_KEY"):
        raise PrerequisiteError(
            "--runtime prime needs PRIME_API_KEY, and it is not set. Export your Prime Intellect API key "
            "(export PRIME_API_KEY=...) and pass a pullable image with --image REF (arena/* images exist "
            "only on this machine); or bench locally with --runtime docker"
        )
    if not plan.bench:
        module = plan.environment.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()
        if importlib.util.find_spec(module) is None:
            raise PrerequisiteError(
                f"environment {plan.environment!r} is not installed (no module {module!r}): "
                "install it (make install) or bench the default arena-bench"
            )
    if plan.docker_image is not None:
        docker_client()  # raises PrerequisiteError with the fix
        image = plan.docker_image
        if not image_exists(image):
            name = image.split("/", 1)[-1].split(":", 1)[0]
            raise PrerequisiteError(
                f"image {image} not found: build it with `arena images build {name}` or pass --image"
            )


def _meta(plan: Plan, bench_id: str) -> Meta:
    return Meta(
        bench_id=bench_id,
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        cpus=os.cpu_count(),
        memory_gib=_memory_gib(),
        platform=platform.platform(),
        load_before=_load(),
        gauge_before_s=cpu_gauge(),
        levels=list(plan.levels),
        rollouts=plan.rollouts,
        model=plan.model,
        latencies=list(plan.latencies),
        sweep=plan.sweep,
        config=plan.settings,
        cgroup="v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "v1",
        docker_version=docker_client().version().get("Version") if plan.docker_image is not None else None,
    )


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


GAUGE_LOOP = 5_000_000
"""The gauge's fixed work: that many additions in pure Python (about 0.4 CPU-s on a quiet 2-core VM)."""


def cpu_gauge() -> float:
    """CPU-s this host spends on `GAUGE_LOOP` additions right now: how fast it runs a fixed piece of work."""
    started, total = time.process_time(), 0
    for number in range(GAUGE_LOOP):
        total += number
    return round(time.process_time() - started, 3)


def _s(value: float | None, digits: int = 2, unit: str = "") -> str:
    return "–" if value is None else f"{value:.{digits}f}{unit}"


def _level_line(elapsed: float, label: str, level: LevelResult) -> str:
    total, overhead = level.phases["total"].p50, level.phases["overhead"].p50
    return (
        f"[{elapsed:7.1f}s] {label:<48} c={level.level:<3} {level.completed}/{level.rollouts} done  "
        f"p50 {_s(total, unit='s')} (overhead {_s(overhead, unit='s')})  "
        f"{_s(level.throughput)} rollouts/s  CPU {_s(level.cpu.per_rollout_s)} s/rollout "
        f"(docker side {_s(level.cpu.docker_side_per_rollout_s)})  "
        f"failed {level.failures}  leaked {level.leaked}"
    )


def _floor_line(elapsed: float, entry: FloorLevel) -> str:
    run, exe = entry.docker_run, entry.docker_exec
    return (
        f"[{elapsed:7.1f}s] {'floor':<48} c={entry.level:<3} docker run p50 {_s(run.wall.p50, unit='s')} "
        f"{run.throughput or 0:.2f}/s · docker exec p50 {_s(exe.wall.p50, 3, 's')} {exe.throughput or 0:.2f}/s  "
        f"failed {run.failures + exe.failures}  leaked {entry.leaked}"
    )


def run_bench(plan: Plan, progress: Progress = print) -> tuple[BenchReport, ReportPaths]:
    """Run the benchmark and write its report; returns (report, paths of report.{json,md,png}).

    Raises:
        PrerequisiteError: see `check_prerequisites`.
        KeyboardInterrupt: after the running eval is stopped and every run's containers are reaped.
    """
    check_prerequisites(plan)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    bench_id = f"bench-{stamp}-{uuid.uuid4().hex[:4]}"
    out_dir = plan.output_dir or Path("outputs") / f"bench-{stamp}"
    runs_dir = out_dir / "runs"
    combos = plan.combos
    meta = _meta(plan, bench_id)
    floor: list[FloorLevel] = []
    results: dict[Combo, list[LevelResult]] = {combo: [] for combo in combos}
    runs: list[str] = []
    policies = {BENCH_MODEL: BENCH_SCRIPT}
    resolver = PolicyResolver(policies, entry_points=lambda: ()) if plan.bench else PolicyResolver(policies)
    started = time.monotonic()
    progress(
        f"bench {bench_id}: {len(combos)} configuration(s) × levels {list(plan.levels)}, "
        f"model latency {', '.join(f'{v:g}' for v in plan.latencies)} s "
        f"(rollouts per level: max({plan.rollouts}, level)); output {out_dir}"
    )
    try:
        with ExitStack() as stack:
            urls = {
                latency: stack.enter_context(start_in_thread(resolver=resolver, latency=latency)).url
                for latency in plan.latencies
            }
            for level in plan.levels:
                if plan.docker_image is not None:
                    docker_side.enlist()  # again at every level: a restarted daemon is out of the group
                if plan.floor:
                    run = f"{bench_id}-floor-c{level}"
                    runs.append(run)
                    entry = measure_floor(str(plan.docker_image), level, plan.rollouts_at[level], bench_id, run)
                    names = leftovers(run)
                    entry = entry.model_copy(update={"leaked_names": names, "leaked": len(names)})
                    if names:
                        reap(run)
                    floor.append(entry)
                    progress(_floor_line(time.monotonic() - started, entry))
                for combo in combos:
                    run = f"{bench_id}-{combo.slug}-c{level}"
                    runs.append(run)
                    result = run_level(plan, combo, level, run, runs_dir, urls[combo.latency])
                    results[combo].append(result)
                    progress(_level_line(time.monotonic() - started, combo.label, result))
    except BaseException:
        _reap_all(runs, progress)
        raise
    finally:
        scope = docker_side.scope()
        docker_side.release()
    meta = meta.model_copy(
        update={
            "elapsed_s": time.monotonic() - started,
            "load_after": _load(),
            "gauge_after_s": cpu_gauge(),
            "docker_side": scope,
        }
    )
    configs = [
        ConfigResult(
            label=combo.label,
            runtime=combo.runtime,
            latency=combo.latency,
            harness=combo.harness,
            environment=combo.environment,
            toolset=combo.toolset,
            image=plan.images[combo.runtime],
            levels=results[combo],
        )
        for combo in combos
    ]
    report = build_report(meta, floor, configs, list(plan.skipped))
    late = _reap_all(runs, progress)
    report.totals.leaked += late
    return report, write_report(report, out_dir)


def _reap_all(runs: list[str], progress: Progress) -> int:
    """Reap whatever any of `runs` left behind; the number of containers removed."""
    removed = 0
    for run in runs:
        try:
            names = reap(run)
        except ArenaError as exc:
            progress(f"could not reap run {run}: {exc}; run `arena reap --run {run}`")
            continue
        if names:
            progress(f"reaped {len(names)} leaked container(s) of {run}: {', '.join(names)}")
        removed += len(names)
    return removed
