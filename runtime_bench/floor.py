"""The raw floor a containerised rollout is compared with, measured at the same concurrency.

Two jobs, each through the docker CLI as verifiers' runtime calls it (the CLI is what is measured):
`docker run --rm IMAGE true` (a whole container lifetime) and `docker exec C true` into one
long-lived container (the cost of each command a rollout runs in its box). Every container carries
`arena.managed=true`, `arena.session=<bench id>` and `verifiers.run=<run>`, so `arena reap --run
<run>` finds leftovers.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from arena.engine import docker_cli, labels, remove_containers, start_detached
from runtime_bench.containers import ContainerProbe
from runtime_bench.model import FloorLevel, JobStats, Summary
from runtime_bench import docker_side
from runtime_bench.stats import summarize, throughput

__all__ = ["measure_floor"]

JOB_TIMEOUT_S = 120.0


def _timed(args: list[str]) -> tuple[float, str | None]:
    """Wall seconds of one docker CLI call, and its error (None when it exited 0)."""
    result = docker_cli(args, timeout=JOB_TIMEOUT_S)
    return result.seconds, result.error


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _concurrently(job: Callable[[], tuple[float, str | None]], jobs: int, level: int) -> JobStats:
    """Run `job` `jobs` times, `level` at a time: wall per job, throughput, and host CPU per job
    (the docker CLI processes plus the docker side, `docker_side.cpu_seconds`)."""
    cli_before, side_before = _children_cpu(), docker_side.cpu_seconds()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=level) as pool:
        results = list(pool.map(lambda _i: job(), range(jobs)))
    wall = time.perf_counter() - started
    cli_s, side_after = _children_cpu() - cli_before, docker_side.cpu_seconds()
    daemon_s = side_after - side_before if side_before is not None and side_after is not None else 0.0
    errors = [e for _s, e in results if e]
    return JobStats(
        cpu_per_job_s=(cli_s + daemon_s) / jobs,
        jobs=jobs,
        wall=Summary.model_validate(summarize(s for s, _e in results)),
        elapsed_s=wall,
        throughput=throughput(jobs - len(errors), wall),
        failures=len(errors),
        errors=errors[:5],
    )


def measure_floor(image: str, level: int, jobs: int, session: str, run: str) -> FloorLevel:
    """`docker run` and `docker exec` floors for `jobs` jobs, `level` at a time.

    Raises:
        DockerError: the long-lived container for the exec floor did not start.
    """
    tags = labels(session, run)
    flags = [part for key, value in tags.items() for part in ("--label", f"{key}={value}")]
    probe = ContainerProbe(run).start()
    container = None
    try:
        runs = _concurrently(lambda: _timed(["run", "--rm", *flags, image, "true"]), jobs, level)
        container = start_detached(image, ["infinity"], tags, entrypoint="sleep")
        execs = _concurrently(lambda: _timed(["exec", container, "true"]), jobs, level)
    finally:
        if container:
            remove_containers([container])
        seen = probe.stop()
    cpu = [c.cpu_s for c in seen.values() if c.cpu_s is not None]
    return FloorLevel(
        level=level,
        run=run,
        docker_run=runs,
        docker_exec=execs,
        containers=len(seen),
        container_cpu_s=sum(cpu) if cpu else None,
    )
