"""Run the smoke taskset through vf-eval on the lean or the stock docker path (test helper, not collected)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import tomli_w

from arena.evalrun import API_KEY_VAR, EvalOutcome, EvalRequest, eval_config, read_outcome
from arena_testkit import SUPPORT

DEADLINE_S = 600


def smoke_request(base_url: str, model: str, image: str, output_dir: Path, name: str, **kwargs: Any) -> EvalRequest:
    return EvalRequest(
        taskset="arena-smoke",
        harness="bash",
        model=model,
        image=image,
        base_url=base_url,
        run_name=name,
        output_dir=output_dir,
        env={"PYTHONPATH": str(SUPPORT)},
        **kwargs,
    )


def run_path(request: EvalRequest, docker: Literal["lean", "stock"], rollouts: int = 1) -> EvalOutcome:
    """vf-eval on `request` with `[env] docker = <docker>` (the flag arena's EvalRequest cannot set yet)."""
    config = eval_config(request)
    config["env"]["docker"] = docker
    config["num_rollouts"] = rollouts
    request.output_dir.mkdir(parents=True, exist_ok=True)
    path = request.output_dir / f"{request.run_name}.toml"
    path.write_text(tomli_w.dumps(config))
    vf_eval = shutil.which("vf-eval") or str(Path(sys.executable).with_name("vf-eval"))
    env = {**os.environ, API_KEY_VAR: "arena-local", "VF_RUN_ID": request.run_name, **request.env}
    log = request.output_dir / f"{request.run_name}.log"
    with open(log, "wb") as out:
        done = subprocess.run(
            [vf_eval, "@", str(path), "--no-rich", "--clean"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=DEADLINE_S,
            check=False,
        )
    return read_outcome(request.run_dir, done.returncode)
