"""The harness-start admission hook: at most LIMIT live-process handshakes run at once, waiting
outside verifiers' 5 s deadline; not installed on a verifiers version it was not written for."""

import sys
import asyncio
import logging

import pytest
import verifiers
from verifiers.v1.runtimes.container import ContainerRuntime

from arena.vf_hooks import DEFAULT_STARTS, install
from arena.evalrun import EvalRequest, launch_eval


def _track(monkeypatch) -> dict[str, int]:
    seen = {"now": 0, "peak": 0, "calls": 0}

    async def handshake(self, argv, env):
        seen["now"] += 1
        seen["calls"] += 1
        seen["peak"] = max(seen["peak"], seen["now"])
        await asyncio.sleep(0.02)
        seen["now"] -= 1
        return argv

    monkeypatch.setattr(ContainerRuntime, "open_process", handshake)
    return seen


async def _starts(count: int) -> list[object]:
    return await asyncio.gather(*(ContainerRuntime.open_process(None, [f"p{i}"], {}) for i in range(count)))


def test_at_most_limit_harnesses_start_at_once_and_all_of_them_start(monkeypatch):
    seen = _track(monkeypatch)
    assert install(3)
    results = asyncio.run(_starts(12))
    assert (seen["peak"], seen["calls"], results) == (3, 12, [[f"p{i}"] for i in range(12)])


def test_without_the_hook_every_start_races_at_once(monkeypatch):
    seen = _track(monkeypatch)
    asyncio.run(_starts(12))
    assert seen["peak"] == 12


def test_another_verifiers_version_is_left_alone(monkeypatch, caplog):
    seen = _track(monkeypatch)
    monkeypatch.setattr(verifiers, "__version__", "0.5.0")
    with caplog.at_level(logging.WARNING, logger="arena.vf_hooks"):
        assert install(3) is False
    asyncio.run(_starts(6))
    assert seen["peak"] == 6 and "not installed" in caplog.text


def test_a_limit_below_one_is_a_clear_error():
    with pytest.raises(ValueError, match="at least 1"):
        install(0)


def test_every_eval_launches_through_the_hooks_and_only_live_harnesses_get_a_start_limit(tmp_path, monkeypatch):
    launched: list[list[str]] = []
    monkeypatch.setattr("arena.evalrun.Supervised", lambda argv, _log, _env: launched.append(list(argv)))
    for harness in ("claude_code", "bash"):
        launch_eval(
            EvalRequest(
                taskset="t",
                harness=harness,
                model="m",
                image="i",
                base_url="http://x",
                run_name=harness,
                output_dir=tmp_path,
            )
        )
    launch_eval(
        EvalRequest(
            taskset="t",
            harness="codex",
            model="m",
            image="i",
            base_url="http://x",
            run_name="off",
            output_dir=tmp_path,
            harness_starts=None,
        )
    )
    hooked, plain, off = launched
    assert hooked[1:4] == ["-m", "arena.vf_hooks", str(DEFAULT_STARTS)] and hooked[4] == "@"
    assert plain[1:4] == ["-m", "arena.vf_hooks", "0"] and off[1:4] == ["-m", "arena.vf_hooks", "0"]


def test_the_hooks_run_under_verifiers_own_vf_eval_and_never_under_a_shell_or_a_wrapper(tmp_path):
    from arena.evalrun import _hookable_python

    entry = "import sys\nfrom verifiers.v1.cli.eval.main import main\n"
    direct = tmp_path / "direct"
    direct.write_text(f"#!{sys.executable}\n{entry}")
    trampoline = tmp_path / "trampoline"  # what installers write for a long or spaced venv path
    trampoline.write_text(f"#!/bin/sh\n'''exec' \"{sys.executable}\" \"$0\" \"$@\"\n' '''\n{entry}")
    wrapper = tmp_path / "wrapper"
    wrapper.write_text("#!/bin/sh\nexec true\n")
    assert _hookable_python(direct) == sys.executable
    assert _hookable_python(trampoline) == sys.executable  # not /bin/sh
    assert _hookable_python(wrapper) is None
