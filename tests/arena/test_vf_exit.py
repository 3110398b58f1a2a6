"""A finished vf-eval leaves without the interpreter's teardown, after its threads, callbacks and writes; anything else exits as before."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arena import vf_exit

SENTINEL = """
class Teardown:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
        sys.stderr.flush()
KEEP = Teardown()
"""
"""An object the interpreter's teardown collects (and says so); a skipped teardown never does."""


def _run(script: str, tmp_path: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    source = "import sys\n" + SENTINEL + textwrap.dedent(script)
    return subprocess.run([sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("code", [0, 3])
def test_a_finished_run_skips_the_teardown_after_its_threads_callbacks_and_writes(tmp_path: Path, code: int) -> None:
    done = _run(
        f"""
        import atexit, threading, time
        from arena import vf_exit
        vf_exit.arm()
        OUT = open("out.txt", "w")  # never closed: only a flush keeps what it holds
        OUT.write("written before the exit\\n")
        def late():
            time.sleep(0.3)
            OUT.write("written by a thread the interpreter joins\\n")
        threading.Thread(target=late).start()
        atexit.register(lambda: OUT.write("written by a later atexit callback\\n"))
        print("on stdout", end="")
        vf_exit.finished({code})
        raise SystemExit({code})
    """,
        tmp_path,
    )
    assert done.returncode == code, done.stderr
    assert "teardown ran" not in done.stderr
    assert done.stdout == "on stdout"
    assert (tmp_path / "out.txt").read_text() == (
        "written before the exit\nwritten by a thread the interpreter joins\nwritten by a later atexit callback\n"
    )


@pytest.mark.parametrize(
    ("ending", "code", "said"),
    [
        ("pass", 0, ""),  # never marked finished
        ("raise RuntimeError('boom')", 1, "RuntimeError: boom"),
        ("vf_exit.finished('bad config'); raise SystemExit('bad config')", 1, "bad config"),
    ],
)
def test_a_run_that_did_not_finish_exits_through_the_interpreter(
    tmp_path: Path, ending: str, code: int, said: str
) -> None:
    done = _run(
        f"""
        from arena import vf_exit
        vf_exit.arm()
        {ending}
    """,
        tmp_path,
    )
    assert done.returncode == code
    assert "teardown ran" in done.stderr
    assert said in done.stderr


def test_flush_open_files_flushes_buffered_writers_and_passes_over_closed_and_read_only_ones(tmp_path: Path) -> None:
    target = tmp_path / "held.txt"
    held = open(target, "w")  # noqa: SIM115 - held open on purpose
    closed = open(tmp_path / "closed.txt", "w")  # noqa: SIM115
    closed.close()
    reader = open(target, "rb")  # noqa: SIM115
    try:
        held.write("buffered")
        assert target.read_text() == ""
        assert vf_exit.flush_open_files() >= 1
        assert target.read_text() == "buffered"
    finally:
        held.close()
        reader.close()


def test_vf_hooks_skips_the_teardown_of_a_finished_vf_eval(tmp_path: Path) -> None:
    """`python -m arena.vf_hooks 0 --help`: vf-eval prints its help and returns; the process then
    leaves without collecting the sentinel (it did, before `arena.vf_exit`), its help on stdout."""
    done = _run(
        """
        import runpy
        sys.argv = ["arena.vf_hooks", "0", "--help"]
        runpy.run_module("arena.vf_hooks", run_name="__main__", alter_sys=True)
    """,
        tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "teardown ran" not in done.stderr
    assert "usage" in done.stdout.lower()
