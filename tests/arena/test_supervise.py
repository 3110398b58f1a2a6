"""The one vf-eval runner: a deadline or Ctrl-C stops an eval's whole process group, SIGTERM then
SIGKILL, so no tool server or docker CLI child outlives it."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arena import supervise
from arena.evalrun import EvalRequest, run_evals
from arena_testkit.fake_vf_eval import ctrl_c_deliverable, put_vf_eval_on_path

# A vf-eval that starts a grandchild in its process group, records both pids, and then hangs; with
# `stubborn` in its model name it ignores SIGTERM, as a wedged eval would.
STUBBORN_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import os, signal, subprocess, sys, time, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    if "stubborn" in config["model"]:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "300"])
    name = os.path.join(config["output_dir"], config["run"]["name"])
    open(name + ".pids.tmp", "w").write(f"{{os.getpid()}} {{child.pid}}")
    os.replace(name + ".pids.tmp", name + ".pids")
    time.sleep(300)
    """
)


@pytest.fixture
def hanging_vf_eval(tmp_path, monkeypatch):
    put_vf_eval_on_path(STUBBORN_VF_EVAL, tmp_path, monkeypatch)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _request(out: Path, name: str, model: str, deadline_s: float | None = None) -> EvalRequest:
    return EvalRequest(
        taskset="t",
        harness="bash",
        model=model,
        image="i",
        base_url="http://x",
        run_name=name,
        output_dir=out,
        deadline_s=deadline_s,
    )


@pytest.mark.slow
def test_an_eval_past_its_deadline_is_stopped_whole_even_when_it_ignores_sigterm(
    hanging_vf_eval, tmp_path, monkeypatch
):
    monkeypatch.setattr(supervise, "TERMINATE_GRACE_S", 1.0)
    out = tmp_path / "out"
    [outcome] = run_evals([_request(out, "run0", "stubborn", deadline_s=3.0)], parallel=1)
    leader, grandchild = (int(pid) for pid in (out / "run0.pids").read_text().split())
    assert outcome.timed_out and outcome.returncode == -signal.SIGKILL and outcome.episodes == []
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(leader) and not _alive(grandchild), "the eval's process group outlived its deadline"


def test_ctrl_c_stops_every_running_evals_whole_process_group(hanging_vf_eval, tmp_path):
    out = tmp_path / "out"
    driver = textwrap.dedent(
        f"""
        from pathlib import Path
        from arena.evalrun import EvalRequest, run_evals
        out = Path({str(out)!r})
        run_evals([EvalRequest(taskset="t", harness="bash", model="sleep", image="i", base_url="http://x",
                               run_name=f"run{{i}}", output_dir=out) for i in range(2)], parallel=2)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", driver], stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_deliverable
    )
    pids: list[int] = []
    try:
        files = [out / "run0.pids", out / "run1.pids"]
        deadline = time.monotonic() + 60
        while not all(f.exists() for f in files):
            assert time.monotonic() < deadline and proc.poll() is None, "the fake evals never started"
            time.sleep(0.1)
        pids = [int(pid) for f in files for pid in f.read_text().split()]
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert "KeyboardInterrupt" in stderr
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids), "a vf-eval or its child outlived the interrupt"
    finally:
        proc.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
