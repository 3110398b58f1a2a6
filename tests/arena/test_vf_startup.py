"""arena.vf_startup against the pinned verifiers: the code it replaces is the code read, the port poll is fast,
vf-eval imports only what a bash run uses, and a warm tool server becomes the server verifiers asked for."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import urllib.error
import urllib.request
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import verifiers
from verifiers.v1.errors import ToolsetError
from verifiers.v1.mcp import launch
from verifiers.v1.runtimes.subprocess import SubprocessRuntime

from arena import vf_startup
from arena.vf_startup import PORT_POLL_S, PROBE, fast_server_polls, hand_over_tool_server, prewarm, read_back_port
from arena_kit.verifiers_seam import VERIFIERS_VERSION as HOOKED_VERSION
from arena_kit.verifiers_seam import launch as seam_launch
from arena_kit.verifiers_seam.launch import PROBE_SHA256, READ_BACK_PORT_SHA256, RUN_BACKGROUND_SHA256, source_digest
from arena_kit.box.warm_start import Order, read_order

HEAVY = (
    "verifiers.v1.acp",
    "verifiers.v1.harnesses.claude_code",
    "verifiers.v1.harnesses.codex",
    "verifiers.v1.tasksets.nemo_gym",
    "verifiers.v1.tasksets.harbor",
    "verifiers.v1.judges.rubric",
    "sympy",
    "math_verify.parser",
    "anthropic._client",
    "anthropic.lib.bedrock",
)
"""What vf-eval imported before a bash rollout of fault-localisation and never used (~0.6 of its ~3 CPU-s)."""


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()[-1]


def test_the_replaced_verifiers_code_is_the_code_read() -> None:
    # A verifiers upgrade fails here first: re-read `_read_back_port` and `run_background`, then move the pins.
    assert verifiers.__version__ == HOOKED_VERSION
    assert source_digest(launch._read_back_port) == READ_BACK_PORT_SHA256
    assert source_digest(SubprocessRuntime.run_background) == RUN_BACKGROUND_SHA256
    assert hashlib.sha256(launch._PROBE.encode()).hexdigest() == PROBE_SHA256
    # what the warm hand-over relies on: a host-side server is spawned as `python -m <module>`
    assert 'command = [python, "-m", type(server).__module__]' in inspect.getsource(launch.serve_in_runtime)


@pytest.mark.slow
def test_vf_eval_imports_only_what_a_bash_run_uses() -> None:
    # What arena.vf_hooks does before vf-eval, then what vf-eval imports up to a bash rollout's start.
    loaded = set(
        json.loads(
            _fresh(
                "import json, sys\nfrom arena.vf_startup import lighten_imports\nassert lighten_imports()\n"
                "import verifiers.v1.cli.eval.main, verifiers.v1.mcp.launch, verifiers.v1.runtimes.container\n"
                "from verifiers.v1.utils import loaders\nloaders.import_taskset('fault-localisation'); loaders.import_harness('bash')\n"
                "import fault_localisation.taskset\nprint(json.dumps(sorted(sys.modules)))"
            )
        )
    )
    assert {"verifiers.v1.harnesses.bash", "verifiers.v1.judge", "fault_localisation.taskset"} <= loaded
    assert not set(HEAVY) & loaded, f"vf-eval imported {sorted(set(HEAVY) & loaded)} before its first rollout"


@pytest.mark.slow
def test_a_deferred_math_verify_scores_as_the_real_one() -> None:
    cases = (
        "[('\\\\boxed{1/2}', '0.5'), ('\\\\boxed{3}', '2'), ('x = \\\\boxed{\\\\frac{2}{4}}', '1/2'), ('none', '1')]"
    )
    score = f"from verifiers.v1.utils.score import verify_boxed_math_answer as v\nprint([v(a, g) for a, g in {cases}])"
    lazy = _fresh(
        f"import sys\nfrom arena.vf_startup import lighten_imports\nlighten_imports()\n{score}\n"
        "assert 'sympy' in sys.modules and sys.modules['math_verify'].__getattr__"
    )
    assert lazy == _fresh(score) == "[1.0, 0.0, 1.0, 0.0]"


class _SlowServer:
    """A runtime whose port file appears on the fourth read."""

    def __init__(self) -> None:
        self.reads = 0

    async def read(self, path: str) -> bytes:
        self.reads += 1
        if self.reads < 4:
            raise FileNotFoundError(path)
        return b"43127\n"


def test_the_port_poll_reads_every_poll_interval_and_keeps_verifiers_error(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    assert asyncio.run(launch._read_back_port(_SlowServer(), "/tmp/vf-port-x")) == 43127
    assert waits == [1, 1, 1], "verifiers' own poll (what this replaces) waits 1 s between reads"
    waits.clear()
    assert asyncio.run(read_back_port(_SlowServer(), "/tmp/vf-port-x")) == 43127
    assert waits == [PORT_POLL_S] * 3 and PORT_POLL_S <= 0.05

    class Silent:
        async def read(self, path: str) -> bytes:
            return b""

    monkeypatch.setattr(vf_startup, "PORT_WAIT_S", 0.0)
    with pytest.raises(ToolsetError, match="server did not report its port at /tmp/p in its runtime"):
        asyncio.run(read_back_port(Silent(), "/tmp/p"))


def _probe_sleeps(probe: str, misses: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[float], object]:
    """Run a readiness probe's source against a server that listens after `misses` refused connections:
    (its sleeps, its exit code)."""
    tries: list[str] = []
    sleeps: list[float] = []

    def urlopen(url: str, timeout: float) -> None:
        tries.append(url)
        if len(tries) <= misses:
            raise ConnectionRefusedError(url)
        raise urllib.error.HTTPError(url, 406, "Not Acceptable", None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    monkeypatch.setattr(time, "sleep", sleeps.append)
    monkeypatch.setattr(sys, "argv", ["-c", "http://127.0.0.1:1/mcp"])
    with pytest.raises(SystemExit) as exit_:
        exec(compile(probe, "<probe>", "exec"), {})
    return sleeps, exit_.value.code


def test_the_probe_retries_every_poll_interval_where_verifiers_sleeps_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _probe_sleeps(launch._PROBE, 2, monkeypatch) == ([1, 1], 0)
    assert _probe_sleeps(PROBE, 2, monkeypatch) == ([PORT_POLL_S] * 2, 0)
    monkeypatch.setattr(time, "monotonic", itertools.chain([0.0, 1.0], itertools.repeat(181.0)).__next__)
    assert _probe_sleeps(PROBE, 5, monkeypatch) == ([PORT_POLL_S], 1)  # gives up after verifiers' 180 s


def test_fast_server_polls_replace_verifiers_code_only_where_it_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "_read_back_port", launch._read_back_port)  # both restored after the test
    monkeypatch.setattr(launch, "_PROBE", launch._PROBE)
    monkeypatch.setattr(verifiers, "__version__", "9.9.9")
    assert fast_server_polls() is False and launch._read_back_port is not read_back_port
    monkeypatch.setattr(verifiers, "__version__", HOOKED_VERSION)
    monkeypatch.setattr(seam_launch, "PROBE_SHA256", "0" * 64)
    assert fast_server_polls() is False and launch._read_back_port is not read_back_port and launch._PROBE != PROBE
    monkeypatch.setattr(seam_launch, "PROBE_SHA256", PROBE_SHA256)
    assert fast_server_polls() is True and launch._read_back_port is read_back_port and launch._PROBE == PROBE


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("not json", "one JSON object"),
        ("[1]", "a JSON object, got list"),
        ('{"module": "m", "cwd": "/", "log": "l"}', "needs 'env' as a dict"),
        ('{"module": 3, "cwd": "/", "log": "l", "env": {}}', "needs 'module' as a str"),
        ('{"module": "m", "cwd": "/", "log": "l", "env": {"A": 1}}', "maps strings to strings"),
        ('{"module": "m", "cwd": "/", "log": "l", "env": {}, "argv": []}', "unknown keys \\['argv'\\]"),
    ],
)
def test_a_bad_order_is_refused_by_name(line: str, wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        read_order(line)


def test_an_order_round_trips() -> None:
    order = Order(module="m.toolset", cwd="/tmp", log="/tmp/l.log", env={"A": "1"})
    assert read_order(order.line()) == order


@pytest.mark.slow
def test_an_unused_warm_server_ends_when_released() -> None:
    warm = prewarm()
    try:
        warm.release()
        assert warm.process.wait(120) == 0
    finally:
        if warm.process.poll() is None:
            warm.process.kill()
            warm.process.wait()


@pytest.mark.slow
def test_the_first_host_server_spawn_becomes_the_warm_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "warm_probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(
        "import json, os, sys, time\n"
        "print(json.dumps({'name': __name__, 'cwd': os.getcwd(), 'argv0': sys.argv[0], 'pid': os.getpid(),\n"
        "                  'mine': os.environ.get('WARM_PROBE'), 'key': os.environ.get('PROBE_API_KEY'), 'path0': sys.path[0],\n"
        "                  'preloaded': 'verifiers.v1.mcp.server' in sys.modules}), flush=True)\n"
        "time.sleep(600)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PROBE_API_KEY", "secret")
    monkeypatch.setattr(SubprocessRuntime, "run_background", SubprocessRuntime.run_background)  # restored after
    warm = prewarm()
    assert hand_over_tool_server(warm)

    async def serve_twice() -> tuple[list[dict[str, Any]], list[int | None]]:
        from verifiers.v1.runtimes.subprocess import SubprocessConfig

        runtime = SubprocessRuntime(SubprocessConfig())
        await runtime.start()
        try:
            for log in ("first.log", "second.log"):
                await runtime.run_background([sys.executable, "-m", "warm_probe_pkg.server"], {"WARM_PROBE": log}, log)
            lines: list[dict[str, Any]] = []
            deadline = time.monotonic() + 120
            for log in ("first.log", "second.log"):
                while not (text := (runtime.workdir / log).read_text() if (runtime.workdir / log).exists() else ""):
                    assert time.monotonic() < deadline, f"{log} stayed empty"
                    await asyncio.sleep(0.05)
                lines.append(json.loads(text.splitlines()[0]))
            lines[0]["workdir"] = str(runtime.workdir)
        finally:
            await runtime.teardown()
        return lines, [warm.returncode]

    (first, second), codes = asyncio.run(serve_twice())
    assert first["pid"] == warm.pid and second["pid"] != warm.pid  # one warm process, then spawns as before
    assert first["name"] == "__main__" and first["argv0"].endswith("warm_probe_pkg/server.py")
    assert first["cwd"] == first["path0"] == first["workdir"] and first["mine"] == "first.log" and first["key"] is None
    assert first["preloaded"] is True and second["preloaded"] is False
    assert codes[0] is not None, "verifiers' teardown did not stop the warm server"
