"""Measure the lean vs the reference bash harness: N fault-localisation oracle rollouts at c=1 each.

Run: `.venv/bin/python runtime_bench/measure/lean_harness.py [N]` (needs docker and the arena images).
Per harness it prints the vf-eval process tree's CPU (vf-eval, its tool servers and every docker
CLI call it made), the CPU of each rollout's container (its cgroup: the harness program, bash and
everything `docker exec` ran in the box, setup included), the trace's phase times and the wall
time. dockerd/containerd CPU is not attributed here: the machine's engine is shared.
"""

from __future__ import annotations

import statistics
import sys
import threading
from pathlib import Path

from arena.evalrun import EvalRequest, run_eval
from arena.policies import model_name
from arena.server import start_in_thread

CGROUPS = Path("/sys/fs/cgroup/cpuacct/docker")
ENV = "fault-localisation"


class CgroupSampler:
    """Keeps the last CPU reading (ns) of every docker container cgroup seen while it runs."""

    def __init__(self, period_s: float = 0.05):
        self.period_s = period_s
        self.usage_ns: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for directory in CGROUPS.iterdir() if CGROUPS.exists() else []:
                try:
                    self.usage_ns[directory.name] = int((directory / "cpuacct.usage").read_text())
                except (OSError, ValueError):
                    continue
            self._stop.wait(self.period_s)

    def __enter__(self) -> "CgroupSampler":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(harness: str, rollouts: int, server_url: str, out: Path) -> dict[str, float]:
    request = EvalRequest(
        taskset=ENV,
        harness=harness,
        model=model_name(ENV, "oracle"),
        image=f"arena/{ENV}:latest",
        base_url=server_url,
        run_name=f"lean-measure-{harness}",
        output_dir=out,
        num_tasks=rollouts,
        max_concurrent=1,
        taskset_args={"split": "dev"},
    )
    with CgroupSampler() as sampler:
        outcome = run_eval(request, progress=lambda _line: None)
    outcome.raise_for_failures()
    # Traces carry docker's short id; cgroups are named by the full one.
    box = [
        max((ns for cid, ns in sampler.usage_ns.items() if e.runtime_id and cid.startswith(e.runtime_id)), default=0)
        / 1e9
        for e in outcome.episodes
    ]

    def phase(name: str) -> float:
        return statistics.mean(e.timing[name]["end"] - e.timing[name]["start"] for e in outcome.episodes)

    harness_s = statistics.mean(e.timing["agent"]["harness"]["duration"] for e in outcome.episodes)
    return {
        "rollouts": len(outcome.episodes),
        "mean_reward": statistics.mean(e.reward or 0.0 for e in outcome.episodes),
        "vf_eval_tree_cpu_s": outcome.cpu_s or 0.0,
        "box_cpu_s_per_rollout": statistics.mean(box),
        "box_cpu_s_min": min(box),
        "box_cpu_s_max": max(box),
        "wall_s": outcome.wall_s or 0.0,
        "boot_s": phase("boot"),
        "setup_s": phase("setup"),
        "agent_s": phase("agent"),
        "harness_s": harness_s,
        "scoring_s": phase("scoring"),
    }


def main() -> None:
    rollouts = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    out = Path("/tmp/arena-lean-measure")
    with start_in_thread() as server:
        for harness in ("bash", "arena-bash"):
            figures = measure(harness, rollouts, server.url, out)
            print(
                harness,
                " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
