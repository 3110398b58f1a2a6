"""`arena probe` and `arena demo` report each episode as it lands (counts, the mean so far, an ETA),
and SIGTERM or SIGHUP stops them as Ctrl-C does: their vf-evals end and no queued one starts.

A fake `vf-eval` on PATH stands in for the real one (which needs docker): it appends one episode at a
time, or sleeps until it is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arena.evalrun import EvalRequest
from arena.progress import EvalProgress, mean_so_far
from arena.traces import read_traces
from arena_testkit.fake_vf_eval import put_vf_eval_on_path
from arena_testkit.synthetic_runs import episode_line, write_run

pytestmark = pytest.mark.slow  # each test starts `arena` and fake vf-evals as processes

GRADUAL_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, time, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    name = config["run"]["name"]
    run_dir = os.path.join(config["output_dir"], name)
    os.makedirs(run_dir, exist_ok=True)
    open(os.path.join(config["output_dir"], name + ".pid"), "w").write(str(os.getpid()))
    if os.environ.get("FAKE_SLEEP"):
        time.sleep(300)
    score = 1.0 if "oracle" in config["model"] else 0.0
    with open(os.path.join(run_dir, "traces.jsonl"), "w") as f:
        for i in range(config["select"]["limit"]):
            trace = {{"id": f"{{name}}-{{i}}", "ok": True, "stop_condition": "agent_completed", "rewards": {{"r": {{"score": score}}}}}}
            f.write(json.dumps({{"ok": True, "task": {{"data": {{"name": f"dev#{{i}}"}}}}, "traces": [trace]}}) + "\\n")
            f.flush()
            time.sleep(0.3)
    """
)


def _arena(out: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "arena.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=out,
    )


def test_probe_prints_each_episode_with_counts_the_mean_so_far_and_an_eta(tmp_path, monkeypatch):
    put_vf_eval_on_path(GRADUAL_VF_EVAL, tmp_path, monkeypatch)
    proc = _arena(
        tmp_path,
        "probe",
        "fault-localisation",
        "--tasks",
        "3",
        "--policies",
        "oracle",
        "--parallel",
        "1",
        "--output-dir",
        str(tmp_path / "out"),
    )
    output, _ = proc.communicate(timeout=300)
    lines = [line for line in output.splitlines() if ": episode " in line]
    assert len(lines) == 6, output  # staller and oracle, 3 tasks each
    oracle = [line for line in lines if "oracle" in line]
    assert "episode 1/3 (dev#0) scored 1.000" in oracle[0] and "mean 1.000" in oracle[0]
    assert "episode 3/3" in oracle[-1] and "all 6/6" in lines[-1]
    assert any("left" in line for line in lines[:-1]), "no ETA while episodes were left"
    assert lines.index(oracle[0]) < output.splitlines().index(
        next(line for line in output.splitlines() if line.startswith("[2/2]"))
    ), "episodes were reported only when the policy ended"


def test_the_progress_of_an_eval_follows_its_growing_traces(tmp_path):
    request = EvalRequest(
        taskset="t",
        harness="bash",
        model="arena/t/oracle",
        image="i",
        base_url="http://x",
        run_name="r",
        output_dir=tmp_path,
        num_tasks=3,
    )
    rows = [episode_line(f"dev#{i}", float(i % 2), trace_id=str(i)) for i in range(3)]
    out = tmp_path / "progress.txt"
    with out.open("w") as log, EvalProgress([request], out=log) as live:
        live.started(request, None)  # type: ignore[arg-type]
        write_run(request.run_dir, rows[:2])
        live.tick()
        write_run(request.run_dir, rows)
        live.tick()
    text = out.read_text().splitlines()
    assert [line.split(": ", 1)[1].split(" (")[0] for line in text] == ["episode 1/3", "episode 2/3", "episode 3/3"]
    assert "mean 0.500" in text[1] and "all 3/3" in text[2]
    assert mean_so_far(read_traces(request.run_dir).episodes) == pytest.approx(1 / 3)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


@pytest.mark.parametrize(
    ("command", "sig"), [("probe", signal.SIGTERM), ("probe", signal.SIGHUP), ("demo", signal.SIGTERM)]
)
def test_a_stop_signal_stops_the_running_evals_as_ctrl_c_does(tmp_path, monkeypatch, command, sig):
    put_vf_eval_on_path(GRADUAL_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    argv = (
        ["probe", "fault-localisation", "--tasks", "2", "--policies", "oracle", "--parallel", "1"]
        if command == "probe"
        else ["demo", "--skip-build"]
    )
    proc = _arena(tmp_path, *argv, "--output-dir", str(out), env={"FAKE_SLEEP": "1"})
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not (files := [p for p in out.rglob("*.pid") if p.read_text()]):
            assert time.monotonic() < deadline and proc.poll() is None, "no fake vf-eval started"
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in files]
        assert all(_alive(pid) for pid in pids)
        proc.send_signal(sig)
        output, _ = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, output
        assert f"stopped by {signal.Signals(sig).name}" in output and "Traceback" not in output
        assert not any(_alive(pid) for pid in pids), "a vf-eval outlived the stop signal"
        assert len(list(out.rglob("*.pid"))) == 1, "a queued eval started after the stop signal"
    finally:
        proc.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
