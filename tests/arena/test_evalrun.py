"""run_evals: parallel vf-evals with outcomes in order, and Ctrl-C stopping all of them.

A fake `vf-eval` on PATH stands in for the real one (which needs docker; the docker tests run it):
it writes its pid, then either writes one trace and exits or sleeps until terminated.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arena.errors import ArenaError
from arena.evalrun import EvalRequest, eval_config, run_evals
from arena_testkit.fake_vf_eval import ctrl_c_deliverable, fake_vf_eval  # noqa: F401 (fixture)


def _request(out: Path, name: str, model: str = "finish") -> EvalRequest:
    return EvalRequest(
        taskset="t",
        harness="bash",
        model=model,
        image="img",
        base_url="http://127.0.0.1:1",
        run_name=name,
        output_dir=out,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_outcomes_come_back_in_request_order_and_each_is_announced(fake_vf_eval, tmp_path):
    out = tmp_path / "out"
    requests = [_request(out, f"run{i}") for i in range(3)]
    heard: list[str] = []
    outcomes = run_evals(requests, parallel=2, on_done=lambda request, _outcome: heard.append(request.run_name))
    assert [o.episodes[0].task for o in outcomes] == ["run0", "run1", "run2"]
    assert [(o.returncode, o.episodes[0].reward, o.episodes[0].turns) for o in outcomes] == [(0, 0.5, 2)] * 3
    assert [o.episodes[0].runtime_id for o in outcomes] == ["box-run0", "box-run1", "box-run2"]
    assert sorted(heard) == ["run0", "run1", "run2"]
    assert "fake vf-eval done" in (out / "run1" / "vf-eval.log").read_text()


def test_agent_args_are_merged_last_so_a_runtime_table_replaces_the_docker_one(tmp_path):
    plain = eval_config(_request(tmp_path, "r"))["env"]["agent"]
    assert plain["runtime"] == {"type": "docker", "image": "img"} and "timeout" not in plain
    request = EvalRequest(
        **{
            **_request(tmp_path, "r").__dict__,
            "agent_args": {"runtime": {"type": "subprocess"}, "timeout": {"rollout": 9}},
        }
    )
    agent = eval_config(request)["env"]["agent"]
    assert (agent["runtime"], agent["timeout"], agent["harness"]) == (
        {"type": "subprocess"},
        {"rollout": 9},
        {"id": "bash"},
    )


def test_parallel_below_one_is_a_clear_error(tmp_path):
    with pytest.raises(ArenaError, match="parallel must be at least 1"):
        run_evals([_request(tmp_path, "r")], parallel=0)


def test_ctrl_c_terminates_the_running_evals_and_starts_no_more(fake_vf_eval, tmp_path):
    out = tmp_path / "out"
    driver = textwrap.dedent(
        f"""
        from pathlib import Path
        from arena.evalrun import EvalRequest, eval_config, run_evals
        out = Path({str(out)!r})
        requests = [EvalRequest(taskset="t", harness="bash", model="sleep", image="i", base_url="http://x", run_name=f"run{{i}}", output_dir=out) for i in range(3)]
        run_evals(requests, parallel=2)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", driver], stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_deliverable
    )
    pids: list[int] = []
    try:
        pid_files = [out / "run0.pid", out / "run1.pid"]
        deadline = time.monotonic() + 60
        while not all(p.exists() and p.read_text() for p in pid_files):
            assert time.monotonic() < deadline and proc.poll() is None, "the first two fake evals never started"
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in pid_files]
        assert all(_alive(pid) for pid in pids)

        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode != 0 and "KeyboardInterrupt" in stderr
        assert not any(_alive(pid) for pid in pids), "a running vf-eval outlived the interrupt"
        assert not (out / "run2.pid").exists(), "a queued eval started after the interrupt"
        assert not list(out.glob("run*/traces.jsonl"))
    finally:
        proc.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
