"""Measure codex rollouts' harness phase with verifiers' `codex` harness and with Arena's (`arena_kit.harnesses`).

Run: `.venv/bin/python runtime_bench/measure/startup_codex.py [--tasks 5]` (the id `arena-codex` is the kit's
top-level module `arena_codex`).
One vf-eval per harness, fault-localisation oracle, `--tasks` rollouts at c=1 against an in-process model
server; per rollout it prints the agent phase's harness duration and the end of the agent phase after the
scripted model's last reply (the agent phase end minus the last model call's end, from the trace).
A checkout script, not shipped in the wheel.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import tomli_w

from arena.evalrun import API_KEY_VAR, EvalRequest, eval_config, read_outcome
from arena.server import start_in_thread


def run(harness: str, base_url: str, out: Path, tasks: int) -> list[dict[str, float]]:
    name = f"codex-{harness}-{os.getpid()}"
    request = EvalRequest(
        taskset="fault-localisation",
        harness="codex",
        model="arena/fault-localisation/oracle",
        image="arena/fault-localisation:latest",
        base_url=base_url,
        run_name=name,
        output_dir=out,
        num_tasks=tasks,
        max_concurrent=1,
    )
    config = eval_config(request)
    config["env"]["taskset"]["split"] = "dev"
    config["env"]["agent"]["harness"]["id"] = harness
    toml = out / f"{name}.toml"
    toml.write_text(tomli_w.dumps(config))
    vf_eval = shutil.which("vf-eval") or str(Path(sys.executable).with_name("vf-eval"))
    env = {**os.environ, API_KEY_VAR: "arena-local", "VF_RUN_ID": name}
    with open(out / f"{name}.log", "wb") as log:
        subprocess.run(
            [vf_eval, "@", str(toml), "--no-rich", "--clean"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=1800,
            check=False,
        )
    rows = []
    for line in (request.run_dir / "traces.jsonl").read_text().splitlines():
        trace = json.loads(line)
        trace = trace["traces"][0] if "traces" in trace else trace
        timing = trace.get("timing") or {}
        agent = timing.get("agent") or {}
        last = max((c["time"]["end"] for c in trace.get("calls") or []), default=None)
        rows.append(
            {
                "harness_s": (agent.get("harness") or {}).get("duration", float("nan")),
                "after_last_reply_s": agent["end"] - last if last and agent.get("end") else float("nan"),
                "reward": sum(r["score"] * r["weight"] for r in (trace.get("rewards") or {}).values()),
            }
        )
    outcome = read_outcome(request.run_dir)
    print(json.dumps({"harness": harness, "failed": len(outcome.failures), "rollouts": rows}), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("/tmp/arena-codex"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with start_in_thread() as server:
        for harness in ("codex", "arena-codex"):
            started = time.time()
            rows = run(harness, server.url, args.out, args.tasks)
            print(
                f"{harness}: median harness phase {statistics.median(r['harness_s'] for r in rows):.2f} s, "
                f"after last reply {statistics.median(r['after_last_reply_s'] for r in rows):.2f} s "
                f"({len(rows)} rollouts, {time.time() - started:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
