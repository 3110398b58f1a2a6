"""Run an installed environment's policy through a real harness in docker (tests' shorthand)."""

from __future__ import annotations

from pathlib import Path

from arena.evalrun import EvalOutcome, EvalRequest, run_eval
from arena.policies import model_name


def env_eval(
    server_url: str, env: str, policy: str, harness: str, output_dir: Path, tasks: int = 1, **kwargs
) -> EvalOutcome:
    model = model_name(env, policy)
    request = EvalRequest(
        taskset=env,
        harness=harness,
        model=model,
        image=f"arena/{env}:latest",  # type: ignore[arg-type]
        base_url=server_url,
        run_name=f"{env}-{policy}-{harness}",
        output_dir=output_dir,
        num_tasks=tasks,
        max_concurrent=tasks,
        taskset_args={"split": "dev"},
        **kwargs,
    )
    return run_eval(request, progress=lambda _line: None)
