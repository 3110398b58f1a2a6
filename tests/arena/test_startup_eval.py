"""One measured vf-eval, launched as Arena launches it: its shared tool server is the warm process started with it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from arena.server import start_in_thread

MEASURE_SCRIPT = Path(__file__).resolve().parents[2] / "runtime_bench" / "measure" / "startup.py"
"""A checkout script (not shipped, not collected); this test runs its `measure` once."""


def _measure_module(monkeypatch: pytest.MonkeyPatch) -> object:
    spec = importlib.util.spec_from_file_location("startup_measure", MEASURE_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.docker
def test_the_tool_server_warms_up_beside_vf_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    measure = _measure_module(monkeypatch)
    with start_in_thread() as server:
        rep = measure.measure("fault-localisation", "bash", server.url, tmp_path, "startup-warm-test")  # type: ignore[attr-defined]
    assert rep.failed == 0 and rep.reward == 1.0, rep
    # Before arena.vf_startup the server was `python -m log_search.toolset`, spawned after vf-eval's imports.
    assert "-m arena_kit.box.warm_start" in rep.server_cmd, rep.server_cmd
    # Spawned early in vf-eval's imports (its eval.log appears once they are done) and served after them.
    # Orders and a ratio, not a wall time from the launch, which a loaded machine stretches (the interpreter's
    # own start-up included): measured 0.1 s of 4.8 s to the log; the old server spawned just after the log
    # appeared (6.24 s against 6.23 s), which the poller's lag on the log could hide from a bare order.
    assert rep.times["server_spawn"] < rep.times["log"] / 2, rep.times
    assert rep.times["log"] <= rep.times["server_up"], rep.times
