"""arena_kit.harnesses.codex: the exit-on-EOF preload against the pinned verifiers, and in the harness image."""

from __future__ import annotations

import asyncio
import subprocess
import time
from importlib.metadata import version
from typing import Any

import pytest
from verifiers.v1.acp import ACPConfig
from verifiers.v1.harnesses.codex import harness as verifiers_codex

from arena_kit.harnesses.codex import ArenaCodexHarness
from arena_kit.verifiers_seam import VERIFIERS_VERSION
from arena_kit.harnesses import codex

IMAGE = "arena/harness:latest"
NODE = "/var/tmp/vf-node/bin/node"


def _verifiers_command() -> list[str]:
    return [
        NODE,
        verifiers_codex.ACP_BIN.format(
            version=verifiers_codex.CodexHarnessConfig().version, acp_version=verifiers_codex.ACP_VERSION
        ),
    ]


def test_the_pins_are_the_versions_whose_shutdown_was_read() -> None:
    # An upgrade fails here first: re-read codex-acp's stdin "close" handler and the ACP runner's
    # shutdown, then move the pins (or drop the preload if codex-acp exits on EOF by itself).
    assert version("verifiers") == VERIFIERS_VERSION
    assert verifiers_codex.ACP_VERSION == codex.ACP_VERSION
    assert codex.exit_on_eof_command(_verifiers_command()) != _verifiers_command()


def test_the_preload_goes_between_node_and_codex_acp() -> None:
    node, preload, acp = codex.exit_on_eof_command(_verifiers_command())
    assert (node, acp) == tuple(_verifiers_command())
    assert preload.startswith("--import=data:text/javascript,") and "SIGKILL" in preload


@pytest.mark.parametrize(
    "command",
    [
        ["/usr/bin/node", "/var/tmp/vf-codex-0.155.1-9.9.9/acp/node_modules/.bin/codex-acp"],
        ["sh", "-c", "codex-acp"],
        [NODE],
    ],
)
def test_an_unknown_command_is_left_as_verifiers_builds_it(
    command: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    assert codex.exit_on_eof_command(command) == command
    assert "shutdown wait" in caplog.text


def test_another_verifiers_version_keeps_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex, "version", lambda name: "9.9.9")
    assert codex.exit_on_eof_command(_verifiers_command()) == _verifiers_command()


def test_the_harness_rewrites_only_the_command_of_verifiers_config(monkeypatch: pytest.MonkeyPatch) -> None:
    built = ACPConfig(env={"A": "1"}, command=_verifiers_command(), prompt="hi")

    async def prepare(self: Any, *args: Any, **kwargs: Any) -> ACPConfig:
        return built

    monkeypatch.setattr(verifiers_codex.CodexHarness, "prepare_acp", prepare)
    harness = ArenaCodexHarness(verifiers_codex.CodexHarnessConfig(id="arena_codex"))
    config = asyncio.run(harness.prepare_acp(None, None, None, "", "", {}, None))
    assert config.command == codex.exit_on_eof_command(_verifiers_command())
    assert (config.env, config.prompt) == ({"A": "1"}, "hi")


def _exit_after_eof(command: list[str]) -> tuple[float, int, int]:
    """Run `command` in the harness image with stdin a FIFO held open until its Codex app server is up,
    then closed: (seconds it lives past that end of input, Codex app servers running before the end of
    input, and still running when it has exited). Timed from the end of input, not from the launch, so
    a slow node start-up on a loaded machine does not count as shutdown time."""
    script = (
        "export PATH=/var/tmp/vf-node/bin:$PATH CODEX_PATH=$(ls -d /var/tmp/vf-codex-*)/acp/node_modules/.bin/codex; "
        'mkfifo /tmp/in; "$@" </tmp/in >/dev/null 2>&1 & p=$!; exec 3>/tmp/in; '
        "for i in $(seq 600); do ps -eo args | grep -q '[a]pp-server' && break; sleep 0.05; done; "
        "before=$(ps -eo args | grep -c '[a]pp-server'); "
        "s=$(date +%s%N); exec 3>&-; wait $p; e=$(date +%s%N); "
        "echo $(( (e - s) / 1000000 )) $before; ps -eo args | grep -c '[a]pp-server' || true"
    )
    name = f"arena-test-codex-eof-{time.time_ns()}"
    try:
        done = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--name",
                name,
                "--network",
                "none",
                "--label",
                "arena.managed=true",
                IMAGE,
                "timeout",
                "60",
                "sh",
                "-c",
                script,
                "sh",
                *command,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    elapsed_ms, before, left = done.stdout.split()
    return int(elapsed_ms) / 1000, int(before), int(left)


@pytest.mark.docker
def test_codex_acp_exits_on_stdin_eof_with_the_preload_and_waits_without_it() -> None:
    # The wait is codex-acp's un-cleared 2 s timer plus Codex's own ~2 s exit; the preload cuts both.
    seconds, codex_before, codex_left = _exit_after_eof(codex.exit_on_eof_command(_verifiers_command()))
    assert codex_before >= 1 and seconds < 1.0 and codex_left == 0
    seconds, codex_before, _ = _exit_after_eof(_verifiers_command())
    assert codex_before >= 1 and seconds >= 1.9


@pytest.mark.docker
def test_a_signal_to_codex_acp_s_group_also_ends_the_codex_it_started_in_another_group() -> None:
    # verifiers terminates a rollout's runner by signalling its process group; with the preload,
    # Codex is in a group of its own, so codex-acp must take it down when it is signalled
    # (without that, Codex ran on for seconds after the SIGTERM).
    script = (
        "export PATH=/var/tmp/vf-node/bin:$PATH CODEX_PATH=$(ls -d /var/tmp/vf-codex-*)/acp/node_modules/.bin/codex; "
        'setsid sh -c \'sleep 30 | "$@"\' sh "$@" >/dev/null 2>&1 & '
        "for i in $(seq 100); do ps -eo args | grep -q '[a]pp-server' && break; sleep 0.1; done; sleep 0.5; "
        "ps -eo args | grep -c '[a]pp-server'; "
        "pg=$(ps -eo pgid=,args= | awk '$2 == \"/var/tmp/vf-node/bin/node\" && $3 ~ /^--import/ {print $1}' | head -1); "
        "kill -TERM -\"$pg\"; sleep 1; ps -eo args | grep -c '[a]pp-server' || true"
    )
    name = f"arena-test-codex-term-{time.time_ns()}"
    try:
        done = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--name",
                name,
                "--network",
                "none",
                "--label",
                "arena.managed=true",
                IMAGE,
                "timeout",
                "60",
                "sh",
                "-c",
                script,
                "sh",
                *codex.exit_on_eof_command(_verifiers_command()),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    before, after = (int(n) for n in done.stdout.split())
    assert before >= 1 and after == 0, done.stdout + done.stderr
