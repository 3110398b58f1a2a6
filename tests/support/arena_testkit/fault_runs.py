"""Helpers of the fault tests: a slow scripted policy that counts its calls, a many-task eval of
the fault-smoke taskset on either docker path, and bounded waits."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from arena.evalrun import EvalOutcome, EvalRequest, run_evals
from arena.traces import TRACES_FILE
from arena_kit.policy import Action, Answer, Observation, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit import SUPPORT

MODEL = "arena/fault-slow"
CALLS_PER_EPISODE = 3
"""The slow policy's model calls in one clean episode: sleep, write the file, answer."""
EVAL_DEADLINE_S = 600.0
TASKSETS = {"stock": "arena-fault-smoke", "lean": "arena-fault-smoke-lean"}
"""The fault-smoke taskset per docker path: verifiers' own runtime under `SingleAgentEnv`, or lean
boxes that `LeanEnv` starts and lends to the rollout (which verifiers' per-agent retries never reach)."""


class CountingPolicy:
    """A scripted policy that sleeps a few seconds, writes the task's file and answers; it counts
    the model calls it serves and the episodes it opened (served a first call, so that rollout is
    now in its sleep and calls again `sleep_s` later). The server runs every policy on one event
    loop thread."""

    def __init__(self, sleep_s: float = 3.0) -> None:
        self._script = ScriptedPolicy(
            [RunShell(f"sleep {sleep_s}"), RunShell("echo arena-fault-ok > done.txt"), Answer("DONE")]
        )
        self._lock = threading.Lock()
        self.calls = 0
        self.opened = 0

    def __call__(self, obs: Observation) -> Action:
        with self._lock:
            self.calls += 1
            self.opened += not obs.steps
        return self._script(obs)


def fault_request(
    run: str,
    output_dir: Path,
    base_url: str,
    image: str,
    tasks: int = 6,
    concurrency: int = 2,
    path: str = "stock",
) -> EvalRequest:
    return EvalRequest(
        taskset=TASKSETS[path],
        harness="bash",
        model=MODEL,
        image=image,
        base_url=base_url,
        run_name=run,
        output_dir=output_dir,
        max_concurrent=concurrency,
        taskset_args={"num_tasks": tasks},
        env={"PYTHONPATH": str(SUPPORT)},
        deadline_s=EVAL_DEADLINE_S,
    )


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 180.0, poll_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(poll_s)


def finished_lines(run_dir: Path) -> int:
    """Complete lines vf-eval has appended to the run's traces so far."""
    path = run_dir / TRACES_FILE
    return path.read_bytes().count(b"\n") if path.exists() else 0


def docker_paths(run_dir: Path) -> list[str]:
    """The docker path each recorded episode's rollout ran on: "lean" in a box the env lent it."""
    rows = [json.loads(line) for line in (run_dir / TRACES_FILE).read_text().splitlines() if line.strip()]
    return [
        "lean"
        if (((row.get("traces") or [{}])[0].get("agent") or {}).get("runtime") or {}).get("borrowed")
        else "stock"
        for row in rows
    ]


def containers_of(run: str) -> list[str]:
    """Every container verifiers labelled with this run, running or not."""
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=verifiers.run={run}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.split()


def eval_during_fault(request: EvalRequest, fault: Callable[[], None], join_s: float) -> EvalOutcome:
    """Run `request`'s eval while `fault` runs beside it (it waits for its moment, breaks something,
    and mends it); waits up to `join_s` for the fault to finish after the eval."""
    thread = threading.Thread(target=fault, daemon=True)
    thread.start()
    try:
        [outcome] = run_evals([request], parallel=1)
    finally:
        thread.join(join_s)
    return outcome
