"""The raw floor a containerised rollout is compared with, measured at the same concurrency.

Two jobs, each through the docker CLI as verifiers' runtime calls it: `docker run --rm IMAGE true`
(a whole container lifetime) and `docker exec C true` into one long-lived container (the cost of
each command a rollout runs in its box). Every container carries `arena.managed=true`,
`arena.session=<bench id>` and `verifiers.run=<run>`, so `arena reap --run <run>` finds leftovers.
"""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from arena.errors import ArenaError
from arena.reaper import MANAGED, RUN_LABEL
from runtime_bench.containers import ContainerProbe, daemon_cpu_seconds
from runtime_bench.stats import summarize, throughput

__all__ = ["measure_floor"]

JOB_TIMEOUT_S = 120


def _labels(session: str, run: str) -> list[str]:
    return ["--label", MANAGED, "--label", f"arena.session={session}", "--label", f"{RUN_LABEL}={run}"]


def _timed(argv: list[str]) -> tuple[float, str | None]:
    """Wall seconds of one docker CLI call, and its error (None when it exited 0)."""
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, f"timed out after {JOB_TIMEOUT_S} s: {' '.join(argv[:4])}"
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return seconds, f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    return seconds, None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _concurrently(job: Callable[[], tuple[float, str | None]], jobs: int, level: int) -> dict:
    """Run `job` `jobs` times, `level` at a time: wall per job, throughput, and host CPU per job
    (the docker CLI processes plus dockerd + containerd; containerd shims and runc are not counted)."""
    cli_before, daemon_before = _children_cpu(), daemon_cpu_seconds()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        results = list(pool.map(lambda _i: job(), range(jobs)))
    wall = time.perf_counter() - started
    cli_s, daemon_after = _children_cpu() - cli_before, daemon_cpu_seconds()
    daemon_s = daemon_after - daemon_before if daemon_before is not None and daemon_after is not None else 0.0
    errors = [e for _s, e in results if e]
    return {
        "cpu_per_job_s": (cli_s + daemon_s) / jobs,
        "jobs": jobs,
        "wall": summarize(s for s, _e in results),
        "elapsed_s": wall,
        "throughput": throughput(jobs - len(errors), wall),
        "failures": len(errors),
        "errors": errors[:5],
    }


def measure_floor(image: str, level: int, jobs: int, session: str, run: str) -> dict:
    """`docker run` and `docker exec` floors for `jobs` jobs, `level` at a time.

    Raises:
        ArenaError: the long-lived container for the exec floor did not start.
    """
    labels = _labels(session, run)
    probe = ContainerProbe(run).start()
    container = None
    try:
        runs = _concurrently(lambda: _timed(["docker", "run", "--rm", *labels, image, "true"]), jobs, level)
        started = subprocess.run(
            ["docker", "run", "-d", *labels, "--entrypoint", "sleep", image, "infinity"],
            capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False,
        )
        if started.returncode != 0:
            raise ArenaError(
                f"the floor's long-lived container ({image}) did not start: {started.stderr.strip()}; "
                "check the engine with `docker info` and the image with `docker image inspect`"
            )
        container = started.stdout.strip()
        execs = _concurrently(lambda: _timed(["docker", "exec", container, "true"]), jobs, level)
    finally:
        if container:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=JOB_TIMEOUT_S, check=False)
        seen = probe.stop()
    cpu = [c.cpu_s for c in seen.values() if c.cpu_s is not None]
    return {
        "level": level,
        "run": run,
        "docker_run": runs,
        "docker_exec": execs,
        "containers": len(seen),
        "container_cpu_s": sum(cpu) if cpu else None,
    }
