"""Run one configuration at one concurrency level: a `vf-eval` of N identical rollouts, watched.

The eval is Arena's (`arena.evalrun.run_evals`: our model server, `VF_RUN_ID` = run name so its
containers carry `verifiers.run=<run>`, a deadline, group SIGTERM → SIGKILL), with the runtime
section swapped for subprocess or prime. While it runs a `ContainerProbe` records its containers
and a trail samples its process tree's CPU (and the docker CLI calls vf-eval reaped); its exit gives
the CPU of vf-eval and every process it reaped (docker CLI calls, tool servers). Phases come from
each trace's `timing`; a rollout starts when its container is created (or its boot, if earlier)
and ends when its container is destroyed. The docker path is the bench taskset's `docker` option
(`arena_bench.BenchEnv`); another environment takes its own default path.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from arena.evalrun import EvalRequest, eval_log_path, run_evals
from arena.reaper import reap
from arena.supervise import Supervised
from arena.traces import Episode
from arena_kit.records import POOL_INFO
from runtime_bench.config import BENCH_ENV, LEAN_RUNTIMES, Combo, Plan
from runtime_bench.containers import ContainerProbe, ContainerStats
from runtime_bench.model import Cpu, Failure, LevelResult, Summary
from runtime_bench import docker_side
from runtime_bench.procs import scan, tree_cpu_seconds
from runtime_bench.stats import docker_cli_seconds, phase_summaries, rollout_row, summarize, throughput

__all__ = ["BENCH_TASKSET_PATH", "run_level"]

BENCH_TASKSET_PATH = Path(__file__).resolve().parent / "bench_taskset"
"""On PYTHONPATH for vf-eval, so `arena-bench` resolves to `arena_bench`."""
STARTUP_ALLOWANCE_S = 180.0
"""vf-eval's own start-up and shutdown, on top of the rollouts' timeouts, before its deadline."""


def _request(plan: Plan, combo: Combo, level: int, count: int, run: str, runs_dir: Path, base_url: str) -> EvalRequest:
    bench = combo.environment == BENCH_ENV
    agent_args: dict[str, Any] = {"timeout": {"setup": plan.rollout_timeout, "rollout": plan.rollout_timeout}}
    image = plan.images[combo.runtime]
    if combo.runtime == "subprocess":
        agent_args["runtime"] = {"type": "subprocess"}
    elif combo.runtime == "prime":
        agent_args["runtime"] = {"type": "prime", **({"image": image} if image else {})}
    waves = math.ceil(count / level)
    taskset_args: dict[str, Any] = {"num_tasks": count, "task": {"toolset": combo.toolset}}
    if combo.docker:
        taskset_args["docker"] = "lean" if combo.runtime in LEAN_RUNTIMES else "stock"
    return EvalRequest(
        taskset=combo.environment,
        harness=combo.harness,
        model=plan.model,
        image=image or "",
        base_url=base_url,
        run_name=run,
        output_dir=runs_dir,
        num_tasks=None if bench else count,
        max_concurrent=level,
        # An environment's task names its own image, which replaces the runtime's (arena_kit.box.image): the
        # bench's image reaches its tasks only as theirs.
        taskset_args=taskset_args if bench else ({"task": {"image": image}} if image else {}),
        agent_args=agent_args,
        env_args={"pool": "auto"} if combo.runtime == "docker-pool" else {},
        # Docker levels run with no egress but the interception (arena_kit.box.isolation); the bench task
        # itself leaves the network open only for the subprocess baseline, which has no box.
        runtime_args={"allow": []} if combo.docker else {},
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_TASKSET_PATH), os.environ.get("PYTHONPATH")]))},
        deadline_s=STARTUP_ALLOWANCE_S + waves * (2 * plan.rollout_timeout + 60 + 10 * combo.latency),
    )


class _CpuTrail:
    """Samples the process tree's CPU every `interval` s, to split vf-eval's start-up CPU from the
    rollouts', and its direct children, to tell the docker CLI calls it reaped from the rest."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.samples: list[tuple[float, float]] = []
        self.children: list[tuple[float, dict[int, tuple[str, float]]]] = []
        """(vf-eval's reaped CPU, its live children's {pid: (name, tree CPU)}) at each sample."""
        self.side_cpu: list[float | None] = []
        """The docker side's CPU at each sample (`docker_side.cpu_seconds`)."""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pid, interval), daemon=True)
        self._thread.start()

    def _run(self, pid: int, interval: float) -> None:
        while not self._done.wait(interval):
            table = scan()
            cpu = tree_cpu_seconds(pid, table)
            if cpu is None or pid not in table:
                continue
            kids = {
                child.pid: (child.comm, tree_cpu_seconds(child.pid, table) or 0.0)
                for child in table.values()
                if child.ppid == pid
            }
            self.samples.append((time.time(), cpu))
            self.children.append((table[pid].reaped_s, kids))
            self.side_cpu.append(docker_side.cpu_seconds(table))

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)

    def at(self, when: float) -> float | None:
        """The last sample taken at or before `when`."""
        before = [cpu for at, cpu in self.samples if at <= when]
        return before[-1] if before else None

    def docker_side_since(self, when: float) -> float | None:
        """CPU-seconds of the docker side from `when` to the last sample (None: not sampled)."""
        before = [cpu for (at, _), cpu in zip(self.samples, self.side_cpu, strict=True) if at <= when]
        if not before or before[-1] is None or not self.side_cpu or self.side_cpu[-1] is None:
            return None
        return self.side_cpu[-1] - before[-1]

    def docker_cli_since(self, when: float) -> float | None:
        """CPU-seconds of the docker CLI calls vf-eval reaped from `when` to the last sample."""
        if not self.samples:
            return None
        series = docker_cli_seconds(self.children)
        before = [cli for (at, _), cli in zip(self.samples, series, strict=True) if at <= when]
        return series[-1] - (before[-1] if before else 0.0)


def _rows(episodes: list[Episode], containers: dict[str, ContainerStats]) -> list[dict[str, Any]]:
    """One row per rollout: phases, its container's CPU and peak memory, and whether it succeeded."""
    by_prefix = {cid[:12]: stats for cid, stats in containers.items()}
    rows = []
    for episode in episodes:
        box = by_prefix.get(episode.runtime_id[:12])
        row: dict[str, Any] = rollout_row(
            episode.timing,
            box.destroyed if box else None,
            (box.created or box.started) if box else None,
            claim=episode.info.get(POOL_INFO),
        )
        row["container"] = box.id[:12] if box else None
        row["cpu_s"] = box.cpu_s if box else None
        row["peak_mib"] = box.peak_bytes / 2**20 if box and box.peak_bytes else None
        row["turns"] = episode.turns
        row["ok"] = not episode.failed
        row["retries"] = episode.retries
        rows.append(row)
    return rows


def run_level(plan: Plan, combo: Combo, level: int, run: str, runs_dir: Path, base_url: str) -> LevelResult:
    """Run `combo` at `level` and return its level result.

    Raises:
        PrerequisiteError: vf-eval is not installed.
        KeyboardInterrupt: after vf-eval is stopped (the runner then reaps the run's containers).
    """
    count = plan.rollouts_at[level]
    request = _request(plan, combo, level, count, run, runs_dir, base_url)
    probe = ContainerProbe(run).start() if combo.docker else None
    side_before = docker_side.cpu_seconds()
    launched = time.time()
    trails: list[_CpuTrail] = []

    def watch(_request: EvalRequest, proc: Supervised) -> None:
        trails.append(_CpuTrail(proc.pid))

    try:
        [outcome] = run_evals([request], parallel=1, on_start=watch)
    finally:
        for trail in trails:
            trail.stop()
        containers = probe.stop() if probe is not None else {}
    exited = time.time()
    side_after = docker_side.cpu_seconds()
    # What vf-eval left is a leak even when Arena's eval runner removed it already.
    leaked = [*outcome.reaped, *reap(run)] if combo.docker else []
    rows = _rows(outcome.episodes, containers)
    starts = [r["start"] for r in rows if r["start"]]
    ends = [r["end"] for r in rows if r["end"]]
    window = max(ends) - min(starts) if starts and ends else None
    failures = [
        Failure(task=e.task, stop=e.stop_condition, error=(e.errors[0].get("message", "") if e.errors else "")[:300])
        for e in outcome.failures
    ]
    if (missing := count - len(outcome.episodes)) > 0:
        reason = "vf-eval timed out" if outcome.timed_out else f"vf-eval exit {outcome.returncode}"
        failures += [
            Failure(task="?", stop=None, error=f"no episode recorded ({reason}; see {eval_log_path(request)})")
        ] * missing
    # The docker side over the rollouts' window only (vf-eval's start-up leaves them to other work on the
    # host), which opens at the first box created: a warm pool boots boxes before the first rollout claims
    # one. vf-eval's own CPU still counts from the first rollout (its start-up is not the pool's).
    cpu_from = min([*starts, *(c.created for c in containers.values() if c.created)]) if starts else None
    daemon_s = trails[0].docker_side_since(cpu_from) if cpu_from and trails else None
    if daemon_s is None and side_before is not None and side_after is not None:
        daemon_s = side_after - side_before
    startup_cpu = trails[0].at(min(starts)) if starts and trails else None
    cli_s = trails[0].docker_cli_since(cpu_from) if cpu_from and trails else None
    return LevelResult(
        level=level,
        rollouts=count,
        completed=len(outcome.episodes),
        failures=len(failures),
        failure_details=failures[:10],
        leaked=len(leaked),
        leaked_names=leaked,
        run=run,
        run_dir=str(request.run_dir),
        phases={phase: Summary.model_validate(summary) for phase, summary in phase_summaries(rows).items()},
        window_s=window,
        throughput=throughput(len(outcome.episodes) - len(outcome.failures), window),
        eval_wall_s=exited - launched,
        startup_s=min(starts) - launched if starts else None,
        cpu=_cpu(containers, outcome.cpu_s or 0.0, startup_cpu, daemon_s, cli_s, count),
        containers=len(containers),
        peak_mib=Summary.model_validate(summarize(r["peak_mib"] for r in rows)),
        rows=rows,
    )


def _cpu(
    containers: dict[str, ContainerStats],
    eval_cpu: float,
    startup_cpu: float | None,
    daemon_s: float | None,
    cli_s: float | None,
    count: int,
) -> Cpu:
    """CPU-seconds of the level, and per rollout (vf-eval's start-up left out of the latter);
    the docker side is `docker_side.cpu_seconds` plus the docker CLI calls (already inside vf-eval's)."""
    sampled = [c.cpu_s for c in containers.values() if c.cpu_s is not None]
    containers_s = sum(sampled) if sampled else None
    rollout_eval_cpu = eval_cpu - startup_cpu if startup_cpu is not None else eval_cpu
    parts = [v for v in (containers_s, rollout_eval_cpu, daemon_s) if v is not None]
    return Cpu(
        containers_s=containers_s,
        eval_process_s=eval_cpu,
        eval_startup_s=startup_cpu,
        daemon_s=daemon_s,
        per_rollout_s=sum(parts) / count if parts else None,
        containers_per_rollout_s=containers_s / count if containers_s is not None else None,
        docker_cli_s=cli_s,
        docker_side_per_rollout_s=(daemon_s + (cli_s or 0.0)) / count if daemon_s is not None else None,
    )
