"""Run one configuration at one concurrency level: a `vf-eval` of N identical rollouts, watched.

The eval is Arena's (`arena.evalrun.eval_config`, our model server, `VF_RUN_ID` = run name, so
its containers carry `verifiers.run=<run>`), with the runtime section swapped for subprocess or
prime. While it runs a `ContainerProbe` records its containers; when it exits, `os.wait4` gives
the CPU of vf-eval and every process it reaped (docker CLI calls, tool servers). Phases come from
each trace's `timing`; a rollout ends when its container is destroyed.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from arena.evalrun import EpisodeSummary, EvalRequest, eval_log_path, finish_eval, launch_eval
from arena.reaper import reap
from runtime_bench.config import BENCH_ENV, BenchConfig, Combo
from runtime_bench.containers import ContainerProbe, ContainerStats, daemon_cpu_seconds
from runtime_bench.stats import phase_summaries, rollout_row, summarize, throughput

__all__ = ["BENCH_TASKSET_PATH", "run_level"]

BENCH_TASKSET_PATH = Path(__file__).resolve().parent / "bench_taskset"
"""On PYTHONPATH for vf-eval, so `arena-bench` resolves to `arena_bench`."""
TERMINATE_GRACE_S = 30


def _request(config: BenchConfig, combo: Combo, level: int, count: int, run: str, runs_dir: Path, base_url: str) -> EvalRequest:
    bench = combo.environment == BENCH_ENV
    agent_args: dict[str, Any] = {"timeout": {"setup": config.rollout_timeout, "rollout": config.rollout_timeout}}
    if combo.runtime == "subprocess":
        agent_args["runtime"] = {"type": "subprocess"}
    elif combo.runtime == "prime":
        image = config.image_for(combo.runtime)
        agent_args["runtime"] = {"type": "prime", **({"image": image} if image else {})}
    return EvalRequest(
        taskset=combo.environment,
        harness=combo.harness,
        model=config.model_name(),
        image=config.image_for(combo.runtime) or "",
        base_url=base_url,
        run_name=run,
        output_dir=runs_dir,
        num_tasks=None if bench else count,
        max_concurrent=level,
        taskset_args={"num_tasks": count, "task": {"toolset": combo.toolset}} if bench else {},
        agent_args=agent_args,
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_TASKSET_PATH), os.environ.get("PYTHONPATH")]))},
    )


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the eval's process group (vf-eval then removes its containers), SIGKILL after a
    grace, and reap it."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _tree_cpu(pid: int) -> float | None:
    """CPU-seconds so far of `pid`, the children it reaped, and its live descendants (tool servers
    included, whose start-up would otherwise only show when they are reaped at the end)."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    if pid not in stats:
        return None
    children: dict[int, list[int]] = {}
    for child, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(child)
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += sum(int(f) for f in stats[current][11:15])
        todo += children.get(current, [])
    return total / os.sysconf("SC_CLK_TCK")


class _CpuTrail:
    """Samples `_tree_cpu(pid)` every `interval` s, to split vf-eval's start-up CPU from the rollouts'."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pid, interval), daemon=True)
        self._thread.start()

    def _run(self, pid: int, interval: float) -> None:
        while not self._done.wait(interval):
            cpu = _tree_cpu(pid)
            if cpu is not None:
                self.samples.append((time.time(), cpu))

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)

    def at(self, when: float) -> float | None:
        """The last sample taken at or before `when`."""
        before = [cpu for at, cpu in self.samples if at <= when]
        return before[-1] if before else None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _wait(proc: subprocess.Popen, deadline_s: float) -> tuple[int, float, bool]:
    """(exit code, CPU-seconds of the process and its reaped descendants, timed out?).

    Past the deadline the group gets SIGTERM, then SIGKILL after a grace; the timers only signal,
    so `os.wait4` stays the one place the process is reaped.
    """
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        _signal_group(proc, signal.SIGTERM)

    timers = [threading.Timer(deadline_s, expire), threading.Timer(deadline_s + TERMINATE_GRACE_S, _signal_group, (proc, signal.SIGKILL))]
    for timer in timers:
        timer.daemon = True
        timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        for timer in timers:
            timer.cancel()
        _stop_group(proc)
        raise
    for timer in timers:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, expired.is_set()


def _rows(episodes: list[EpisodeSummary], containers: dict[str, ContainerStats]) -> list[dict[str, Any]]:
    """One row per rollout: phases, its container's CPU and peak memory, and whether it succeeded."""
    by_prefix = {cid[:12]: stats for cid, stats in containers.items()}
    rows = []
    for episode in episodes:
        box = by_prefix.get(episode.runtime_id[:12])
        row: dict[str, Any] = rollout_row(episode.timing, box.destroyed if box else None)
        row["container"] = box.id[:12] if box else None
        row["cpu_s"] = box.cpu_s if box else None
        row["peak_mib"] = box.peak_bytes / 2**20 if box and box.peak_bytes else None
        row["turns"] = episode.turns
        row["ok"] = not episode.failed
        rows.append(row)
    return rows


def run_level(config: BenchConfig, combo: Combo, level: int, run: str, runs_dir: Path, base_url: str) -> dict[str, Any]:
    """Run `combo` at `level` and return its level result (the shape `runtime_bench.report` reads).

    Raises:
        PrerequisiteError: vf-eval is not installed.
        KeyboardInterrupt: after vf-eval is stopped (the runner then reaps the run's containers).
    """
    count = config.rollouts_at(level)
    request = _request(config, combo, level, count, run, runs_dir, base_url)
    probe = ContainerProbe(run).start() if combo.runtime == "docker" else None
    daemon_before = daemon_cpu_seconds()
    launched = time.time()
    log_path = eval_log_path(request)
    proc = launch_eval(request, log_path)
    trail = _CpuTrail(proc.pid)
    try:
        waves = math.ceil(count / level)
        returncode, eval_cpu, timed_out = _wait(proc, 180 + waves * (2 * config.rollout_timeout + 60))
    except BaseException:
        trail.stop()
        if probe is not None:
            probe.stop()
        raise  # the runner reaps every run it started
    trail.stop()
    exited = time.time()
    containers = probe.stop() if probe is not None else {}
    daemon_after = daemon_cpu_seconds()
    leaked = reap(run) if combo.runtime == "docker" else []
    outcome = finish_eval(request, returncode)
    rows = _rows(outcome.episodes, containers)
    starts = [r["start"] for r in rows if r["start"]]
    ends = [r["end"] for r in rows if r["end"]]
    window = max(ends) - min(starts) if starts and ends else None
    failures = [
        {"task": e.task, "stop": e.stop_condition, "error": (e.errors[0].get("message", "") if e.errors else "")[:300]}
        for e in outcome.failures
    ]
    if (missing := count - len(outcome.episodes)) > 0:
        reason = "vf-eval timed out" if timed_out else f"vf-eval exit {returncode}"
        failures += [{"task": "?", "stop": None, "error": f"no episode recorded ({reason}; see {log_path})"}] * missing
    daemon_s = daemon_after - daemon_before if daemon_before is not None and daemon_after is not None else None
    return {
        "level": level,
        "rollouts": count,
        "completed": len(outcome.episodes),
        "failures": len(failures),
        "failure_details": failures[:10],
        "leaked": len(leaked),
        "leaked_names": leaked,
        "run": run,
        "run_dir": str(request.run_dir),
        "phases": phase_summaries(rows),
        "window_s": window,
        "throughput": throughput(len(outcome.episodes) - len(outcome.failures), window),
        "eval_wall_s": exited - launched,
        "startup_s": min(starts) - launched if starts else None,
        "cpu": _cpu(containers, eval_cpu, trail.at(min(starts)) if starts else None, daemon_s, count),
        "containers": len(containers),
        "peak_mib": summarize(r["peak_mib"] for r in rows),
        "rows": rows,
    }


def _cpu(
    containers: dict[str, ContainerStats], eval_cpu: float, startup_cpu: float | None, daemon_s: float | None, count: int
) -> dict[str, float | None]:
    """CPU-seconds of the level, and per rollout (vf-eval's start-up left out of the latter)."""
    sampled = [c.cpu_s for c in containers.values() if c.cpu_s is not None]
    containers_s = sum(sampled) if sampled else None
    rollout_eval_cpu = eval_cpu - startup_cpu if startup_cpu is not None else eval_cpu
    parts = [v for v in (containers_s, rollout_eval_cpu, daemon_s) if v is not None]
    return {
        "containers_s": containers_s,
        "eval_process_s": eval_cpu,
        "eval_startup_s": startup_cpu,
        "daemon_s": daemon_s,
        "per_rollout_s": sum(parts) / count if parts else None,
        "containers_per_rollout_s": containers_s / count if containers_s is not None else None,
    }
