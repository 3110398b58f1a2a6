"""The prestart host, run here as the box runs it (`python3 -I -c HOST`): it prints its PID, loads the
program without running its entry point, says ready, and runs `main(args)` with the run's env, workdir,
argv and /dev/null for stdin; no run line, no run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from arena_kit.runtimes.lean_docker.prestart import HOST, READY

PROGRAM = b"""
import json, os, sys
LOADED = "imports and definitions ran"
def main(argv):
    print(json.dumps({"argv": argv, "sys_argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("RUN_VAR"),
                      "kept": os.environ.get("BOX_VAR"), "stdin": sys.stdin.read(), "null": os.path.samestat(os.fstat(0), os.stat(os.devnull)),
                      "loaded": LOADED}))
    raise SystemExit(int(argv[-1]))
if __name__ == "__main__":
    print("the entry point ran at load")
"""


def _host(tmp_path: Path, *lines: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
    stdin = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return subprocess.run(
        [sys.executable, "-I", "-c", HOST],
        input=stdin,
        capture_output=True,
        timeout=60,
        env={**os.environ, "BOX_VAR": "box"},
        cwd=tmp_path,
    )


def test_the_host_loads_the_program_then_runs_it_as_its_exec_would(tmp_path: Path) -> None:
    workdir = tmp_path / "app"
    workdir.mkdir()
    load = {"source": PROGRAM.decode(), "name": "<program>"}
    run = {
        "path": "/tmp/vf-scripts-arena/runner.py",
        "args": ["--flag", "3"],
        "env": {"RUN_VAR": "run"},
        "cwd": str(workdir),
    }
    done = _host(tmp_path, load, run)
    pid, rest = done.stdout.split(b"\n", 1)
    assert pid.decode().isdigit()
    assert rest.startswith(READY) and b"entry point ran" not in rest
    report = json.loads(rest[len(READY) :])
    assert done.returncode == 3, done.stderr
    assert report == {
        "argv": ["--flag", "3"],
        "sys_argv": ["/tmp/vf-scripts-arena/runner.py", "--flag", "3"],
        "cwd": str(workdir),
        "env": "run",
        "kept": "box",
        "stdin": "",
        "null": True,
        "loaded": "imports and definitions ran",
    }


def test_a_host_whose_stdin_closes_before_its_run_runs_nothing(tmp_path: Path) -> None:
    done = _host(tmp_path, {"source": PROGRAM.decode(), "name": "<program>"})
    assert done.returncode == 0 and done.stdout.split(b"\n", 1)[1] == READY
