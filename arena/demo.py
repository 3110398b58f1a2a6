"""The main job on the embedded default: build the images, serve the scripted policies, and run a
small eval per installed environment (oracle and staller) on the docker runtime.

Runs are named by the demo's start time; `resume` continues the newest demo of the harness (its
finished episodes are kept) against a model server on the port that demo used, since vf-eval
resumes only the identical config."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from arena.choices import Harness
from arena.errors import PrerequisiteError, UsageError
from arena.evalrun import EvalOutcome, EvalRequest, eval_log_path, run_evals, saved_server_url
from arena.images import build_images, default_ca_bundle, image_ref
from arena.installed import environment_ids
from arena.policies import model_name
from arena.scored import MEAN_LEGEND, score_episodes
from arena.server import start_in_thread
from arena.supervise import Supervised

__all__ = ["render_rows", "run_demo"]

DEMO_TASKS = 3
DEMO_POLICIES = ("oracle", "staller")
STAMP = "????????-??????"
"""The glob of `time.strftime('%Y%m%d-%H%M%S')`, the suffix of a demo's run names."""


def run_demo(
    harness: Harness = "bash", output_dir: Path = Path("outputs"), skip_build: bool = False, resume: bool = False
) -> int:
    """Run the demo (or, with `resume`, finish the newest one); 0 when every episode scored (`arena.scored`).

    Raises:
        UsageError: `resume` but no demo of this harness under `output_dir`.
        PrerequisiteError: the resumed demo's model-server port is taken.
    """
    envs = environment_ids()
    if not envs:
        print("no environments installed: run `make install` first")
        return 2
    if not skip_build:
        build_images(ca_bundle=default_ca_bundle())
    stamp = _latest_stamp(output_dir, harness) if resume else time.strftime("%Y%m%d-%H%M%S")
    port = _saved_port(output_dir, harness, stamp) if resume else 0
    try:
        server = start_in_thread(port=port)
    except OSError as exc:
        raise PrerequisiteError(
            f"cannot resume the demo {stamp}: its model-server port {port} is taken ({exc}); "
            "free the port, or run a fresh demo"
        ) from None
    with server:
        print(f"model server: {server.url} (policies by model name)")
        requests = [
            EvalRequest(
                taskset=env_id,
                harness=harness,
                model=model_name(env_id, policy),
                image=image_ref(env_id),
                base_url=server.url,
                output_dir=output_dir,
                run_name=_run_name(env_id, policy, harness, stamp),
                num_tasks=DEMO_TASKS,
                max_concurrent=DEMO_TASKS,
                taskset_args={"split": "dev"},
                resume=resume,
            )
            for env_id in envs
            for policy in DEMO_POLICIES
        ]
        outcomes = _run_with_progress(requests)
        rows = [(r.taskset, r.model.rsplit("/", 1)[-1], o, o.wall_s or 0.0) for r, o in zip(requests, outcomes)]
    print(render_rows(rows))
    for _, _, outcome, _ in rows:
        if outcome.fail_closed:
            print(f"failed closed: {outcome.run_dir.name}: {outcome.fail_closed}")
    failed = [o for _, _, o, _ in rows if score_episodes(o.episodes).failed or not o.episodes or o.returncode]
    for outcome in failed:
        print(f"failed: {outcome.run_dir} (see {outcome.run_dir}/vf-eval.log)")
    print(f"\ntraces: {output_dir}/demo-*-{stamp}/traces.jsonl")
    return 1 if failed else 0


def _run_with_progress(requests: Sequence[EvalRequest]) -> list[EvalOutcome]:
    """Run the evals one after another with per-episode progress (`arena.progress`)."""
    from arena.progress import EvalProgress

    with EvalProgress(requests) as live:

        def started(request: EvalRequest, proc: Supervised) -> None:
            live.progress.console.print(
                f"vf-eval {request.taskset} · {request.harness} · {request.model} · log {eval_log_path(request)}",
                highlight=False,
                soft_wrap=True,
            )
            live.started(request, proc)

        return run_evals(
            requests, parallel=1, on_start=started, on_tick=live.tick, on_done=live.wrap(lambda _r, _o: None)
        )


def render_rows(rows: Sequence[tuple[str, str, EvalOutcome, float]]) -> str:
    """The demo's table: each run's one mean and its 95 % interval (`arena.scored`), and beside it
    `failed`: episodes not in the mean (count, rate), of them `infra` on an infrastructure fault;
    `agent`: episodes the agent ended by breaking its own box (scored 0, the agent's, not failures);
    then pass@k/pass^k with several rollouts a task, and a note where the interval says little."""
    lines = [
        f"\n{'environment':<20} {'policy':<8} {'episodes':>8} {'failed':>8} {'infra':>5} {'agent':>5} {'retried':>7} {'wall s':>7}  one mean [95% interval]"
    ]
    for env_id, policy, outcome, seconds in rows:
        scores = score_episodes(outcome.episodes)
        beside = scores.beside()
        lines.append(
            f"{env_id:<20} {policy:<8} {scores.episodes:>8} {scores.failed_text():>8} {scores.infra:>5} {scores.agent_faults:>5} "
            f"{outcome.retries:>7} {seconds:>7.1f}  {scores.estimate.text():<21}" + (f"  {beside}" if beside else "")
        )
    lines.append(MEAN_LEGEND)
    return "\n".join(lines)


def _run_name(env_id: str, policy: str, harness: str, stamp: str) -> str:
    return f"demo-{env_id}-{policy}-{harness}-{stamp}"


def _latest_stamp(output_dir: Path, harness: str) -> str:
    stamps = sorted({d.name[-len(STAMP) :] for d in output_dir.glob(f"demo-*-{harness}-{STAMP}") if d.is_dir()})
    if not stamps:
        raise UsageError(f"no {harness} demo to resume under {output_dir}; run `arena demo --harness {harness}` first")
    return stamps[-1]


def _saved_port(output_dir: Path, harness: str, stamp: str) -> int:
    """The port of the model server the demo's runs were started against (0: none started yet)."""
    for run_dir in sorted(output_dir.glob(f"demo-*-{harness}-{stamp}")):
        url = saved_server_url(run_dir)
        if url is not None:
            return int(url.rsplit(":", 1)[1])
    return 0
