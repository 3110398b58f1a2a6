"""The main job on the embedded default: build the images, serve the scripted policies, and run a
small eval per installed environment (oracle and staller) on the docker runtime."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from arena.choices import Harness
from arena.evalrun import EvalOutcome, EvalRequest, run_eval
from arena.images import build_images, default_ca_bundle, image_ref
from arena.installed import environment_ids
from arena.policies import model_name
from arena.server import start_in_thread

__all__ = ["run_demo"]

DEMO_TASKS = 3
DEMO_POLICIES = ("oracle", "staller")


def run_demo(harness: Harness = "bash", output_dir: Path = Path("outputs"), skip_build: bool = False) -> int:
    envs = environment_ids()
    if not envs:
        print("no environments installed: run `make install` first")
        return 2
    if not skip_build:
        build_images(ca_bundle=default_ca_bundle())
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rows: list[tuple[str, str, EvalOutcome, float]] = []
    with start_in_thread() as server:
        print(f"model server: {server.url} (policies by model name)")
        for env_id in envs:
            for policy in DEMO_POLICIES:
                started = time.monotonic()
                outcome = run_eval(
                    EvalRequest(
                        taskset=env_id, harness=harness, model=model_name(env_id, policy),
                        image=image_ref(env_id), base_url=server.url, output_dir=output_dir,
                        run_name=f"demo-{env_id}-{policy}-{harness}-{stamp}", num_tasks=DEMO_TASKS,
                        max_concurrent=DEMO_TASKS, taskset_args={"split": "dev"},
                    )
                )
                rows.append((env_id, policy, outcome, time.monotonic() - started))
    print(f"\n{'environment':<20} {'policy':<8} {'episodes':>8} {'failed':>6} {'mean reward':>11} {'wall s':>7}")
    for env_id, policy, outcome, seconds in rows:
        rewards = [e.reward or 0.0 for e in outcome.episodes]
        mean = statistics.fmean(rewards) if rewards else float("nan")
        print(f"{env_id:<20} {policy:<8} {len(outcome.episodes):>8} {len(outcome.failures):>6} {mean:>11.3f} {seconds:>7.1f}")
    failed = [o for _, _, o, _ in rows if o.failures or not o.episodes or o.returncode]
    for outcome in failed:
        print(f"failed: {outcome.run_dir} (see {outcome.run_dir}/vf-eval.log)")
    print(f"\ntraces: {output_dir}/demo-*-{stamp}/traces.jsonl")
    return 1 if failed else 0
