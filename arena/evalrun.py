"""Run one `vf-eval` on the docker runtime against a model server, and read back what happened.

`vf-eval` exits 0 even when every episode failed, so the outcome comes from `traces.jsonl`:
an episode counts as failed unless `ok` is true, `errors` is empty and the stop condition is one
a finished agent ends with. The eval's run id (`VF_RUN_ID`) is the run name, so verifiers labels
its containers `verifiers.run=<run name>` and `arena reap --run` can find them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomli_w

from arena.errors import ArenaError, PrerequisiteError
from arena.rewrite_hook import RUN_DIR_ENV

__all__ = ["EpisodeSummary", "EvalOutcome", "EvalRequest", "eval_config", "eval_log_path", "finish_eval", "launch_eval", "read_outcome", "run_eval", "run_evals"]

Harness = Literal["bash", "claude_code", "codex"]
API_KEY_VAR = "ARENA_MODEL_KEY"
GOOD_STOPS = {"agent_completed", "user_closed", "max_turns_reached", None}
"""Stop conditions of an agent that ran to its end (anything else: a timeout, an error...)."""


@dataclass(frozen=True)
class EvalRequest:
    taskset: str
    """Verifiers taskset id, e.g. `fault-localisation`."""
    harness: Harness
    model: str
    """Model name the server resolves to a policy, e.g. `arena/fault-localisation/oracle`."""
    image: str
    base_url: str
    """The model server, e.g. `http://127.0.0.1:8765` (without `/v1`)."""
    run_name: str
    output_dir: Path = Path("outputs")
    num_tasks: int | None = None
    max_concurrent: int = 4
    max_turns: int = 40
    select: dict[str, Any] = field(default_factory=dict)
    """verifiers `[select]` keys besides `limit` (e.g. `shuffle`, `seed`, `skip`)."""
    taskset_args: dict[str, Any] = field(default_factory=dict)
    runtime_args: dict[str, Any] = field(default_factory=dict)
    agent_args: dict[str, Any] = field(default_factory=dict)
    """Keys merged into the `[env.agent]` table last (e.g. `timeout`, or a whole `runtime` table
    that replaces the docker one)."""
    harness_args: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for vf-eval (e.g. PYTHONPATH for test-only tasksets)."""

    @property
    def run_dir(self) -> Path:
        return self.output_dir / self.run_name


@dataclass(frozen=True)
class EpisodeSummary:
    task: str
    ok: bool
    errors: list[dict]
    stop_condition: str | None
    reward: float | None
    rewards: dict[str, Any]
    metrics: dict[str, Any]
    info: dict[str, Any]
    timing: dict[str, Any]
    turns: int
    runtime_id: str = ""
    """The id of the box the rollout ran in (a container id on docker)."""

    @property
    def failed(self) -> bool:
        return not self.ok or bool(self.errors) or self.stop_condition not in GOOD_STOPS


@dataclass(frozen=True)
class EvalOutcome:
    run_dir: Path
    returncode: int
    episodes: list[EpisodeSummary]

    @property
    def failures(self) -> list[EpisodeSummary]:
        return [e for e in self.episodes if e.failed]

    def raise_for_failures(self) -> None:
        """Raise ArenaError naming every failed episode (and the log) if any failed."""
        if self.returncode != 0 or not self.episodes or self.failures:
            lines = [f"- {e.task}: ok={e.ok} stop={e.stop_condition} errors={[x.get('message', '')[:200] for x in e.errors]}" for e in self.failures]
            raise ArenaError(
                f"eval {self.run_dir} failed: vf-eval exit {self.returncode}, {len(self.episodes)} episode(s), "
                f"{len(self.failures)} failed\n" + "\n".join(lines) + f"\nlog: {self.run_dir / 'vf-eval.log'}"
            )


def eval_config(request: EvalRequest) -> dict[str, Any]:
    """The vf-eval TOML for a request (push off, docker runtime, our model server)."""
    config: dict[str, Any] = {
        "model": request.model,
        "push": False,
        "output_dir": str(request.output_dir),
        "num_rollouts": 1,
        "max_concurrent": request.max_concurrent,
        "client": {"base_url": request.base_url.rstrip("/") + "/v1", "api_key_var": API_KEY_VAR},
        "run": {"name": request.run_name},
        "env": {
            "taskset": {"id": request.taskset, **request.taskset_args},
            "agent": {
                "max_turns": request.max_turns,
                "harness": {"id": request.harness, **request.harness_args},
                "runtime": {"type": "docker", "image": request.image, **request.runtime_args},
                **request.agent_args,
            },
        },
    }
    select = {**request.select, **({"limit": request.num_tasks} if request.num_tasks is not None else {})}
    if select:
        config["select"] = select
    return config


def launch_eval(request: EvalRequest, log_path: Path) -> subprocess.Popen:
    """Start vf-eval for `request` in its own process group; output goes to `log_path`."""
    vf_eval = shutil.which("vf-eval") or str(Path(sys.executable).with_name("vf-eval"))
    if not Path(vf_eval).exists():
        raise PrerequisiteError("vf-eval not found; install the project (make install) into this Python")
    request.output_dir.mkdir(parents=True, exist_ok=True)
    config_path = request.output_dir / f"{request.run_name}.arena.toml"
    config_path.write_text(tomli_w.dumps(eval_config(request)))
    env = {
        **os.environ, API_KEY_VAR: "arena-local", "VF_RUN_ID": request.run_name,
        RUN_DIR_ENV: str(request.run_dir.resolve()), **request.env,
    }
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [vf_eval, "@", str(config_path), "--no-rich", "--clean"],
            stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
        )


def run_eval(request: EvalRequest, progress: Callable[[str], None] = print) -> EvalOutcome:
    """Run vf-eval for `request` to the end and summarise its traces; the log is kept in the run dir."""
    progress(f"vf-eval {request.taskset} · {request.harness} · {request.model} · log {eval_log_path(request)}")
    return run_evals([request], parallel=1)[0]


def run_evals(
    requests: Sequence[EvalRequest], parallel: int, on_done: Callable[[EvalRequest, EvalOutcome], None] = lambda _r, _o: None,
) -> list[EvalOutcome]:
    """Run the requests' vf-evals, `parallel` at a time, and return their outcomes in order; `on_done`
    hears of each as it ends. Ctrl-C (or any error) starts no more and terminates the running ones,
    which lets each vf-eval tear its containers down, before it propagates."""
    if parallel < 1:
        raise ArenaError(f"parallel must be at least 1, got {parallel}")
    queue = list(enumerate(requests))
    running: dict[int, subprocess.Popen] = {}
    outcomes: dict[int, EvalOutcome] = {}
    try:
        while queue or running:
            while queue and len(running) < parallel:
                index, request = queue.pop(0)
                running[index] = launch_eval(request, eval_log_path(request))
            for index, proc in list(running.items()):
                if proc.poll() is not None:
                    del running[index]
                    outcomes[index] = finish_eval(requests[index], proc.returncode)
                    on_done(requests[index], outcomes[index])
            time.sleep(0.2)
    except BaseException:
        for proc in running.values():
            proc.terminate()
        for proc in running.values():
            proc.wait()
        raise
    return [outcomes[i] for i in range(len(requests))]


def eval_log_path(request: EvalRequest) -> Path:
    """Where vf-eval's output for `request` goes (copied into the run dir when it ends)."""
    return request.output_dir / f"{request.run_name}.vf-eval.log"


def finish_eval(request: EvalRequest, returncode: int) -> EvalOutcome:
    """Keep the log in the run dir and summarise the ended eval's traces."""
    if request.run_dir.exists():
        shutil.copy(eval_log_path(request), request.run_dir / "vf-eval.log")
    return read_outcome(request.run_dir, returncode)


def read_outcome(run_dir: Path, returncode: int = 0) -> EvalOutcome:
    """Summarise `<run_dir>/traces.jsonl` (missing file: no episodes)."""
    episodes: list[EpisodeSummary] = []
    traces = run_dir / "traces.jsonl"
    if traces.exists():
        for line in traces.read_text().splitlines():
            if line.strip():
                episodes.append(_summarise(json.loads(line)))
    return EvalOutcome(run_dir=run_dir, returncode=returncode, episodes=episodes)


def _summarise(episode: dict[str, Any]) -> EpisodeSummary:
    traces = episode.get("traces") or [{}]
    trace = traces[0]
    data = (episode.get("task") or {}).get("data") or {}
    calls = trace.get("calls") or []
    return EpisodeSummary(
        task=str(data.get("name") or data.get("id") or data.get("idx")),
        ok=bool(episode.get("ok")) and bool(trace.get("ok", True)),
        errors=[*(episode.get("errors") or []), *(trace.get("errors") or [])],
        stop_condition=trace.get("stop_condition"),
        reward=_reward(trace),
        rewards=trace.get("rewards") or {},
        metrics=trace.get("metrics") or {},
        info=trace.get("info") or {},
        timing=trace.get("timing") or {},
        turns=len(calls),
        runtime_id=str(((trace.get("agent") or {}).get("runtime") or {}).get("id") or ""),
    )


def _reward(trace: dict[str, Any]) -> float | None:
    """The trace's reward: the sum of score × weight (None if any signal failed to score)."""
    rewards = trace.get("rewards") or {}
    if any(r.get("score") is None for r in rewards.values()):
        return None
    return sum(r["score"] * r.get("weight", 1.0) for r in rewards.values())
