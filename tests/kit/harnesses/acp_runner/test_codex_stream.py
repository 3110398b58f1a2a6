"""Arena's ACP runner drives Codex's app server itself for verifiers' codex harness (`codex_stream`): the native
binary gets the npm launcher's env and what codex-acp sends it (its `initialize`, reads, `thread/start` and
`turn/start`, as the adapter's own log showed them in the harness image), and the host the replies, steering and
typed failures it gets through the adapter. `test_node_harness_fidelity_docker.py` holds whole rollouts."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from verifiers.v1.acp import ACPTurn
from verifiers.v1.harnesses.codex.harness import CodexHarness

from arena_kit.harnesses.acp_runner import RUNNER_SOURCE
from arena_kit.harnesses.acp_runner.codex_stream import (
    CAPABILITIES,
    CODEX_ACP_VERSION,
    CODEX_VERSION,
    NATIVE,
    speaks_for_codex,
)
from arena_kit.harnesses.codex import exit_on_eof_command

HERE = Path(__file__).parent
GATEWAY = {
    "methodId": "gateway",
    "_meta": {
        "gateway": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "headers": {"Authorization": "Bearer s"},
            "providerName": "Verifiers",
        }
    },
}


def _modules(tmp_path: Path) -> Path:
    """A codex install laid out as the harness image's, the scripted app server as its native binary."""
    modules = tmp_path / f"vf-codex-{CODEX_VERSION}-{CODEX_ACP_VERSION}" / "acp" / "node_modules"
    (modules / NATIVE).parent.mkdir(parents=True)
    (modules / NATIVE).symlink_to(HERE / "scripted_codex.py")
    (modules / "@openai" / "codex" / "bin").mkdir(parents=True)
    return modules


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "INITIAL_AGENT_MODE": "agent-full-access",
        "CODEX_HOME": str(tmp_path / "home"),
        "DEFAULT_AUTH_REQUEST": json.dumps(GATEWAY),
        "CODEX_CONFIG": json.dumps({"model": "known", "features": {"apps": False}}),
        "NO_BROWSER": "1",
    }


def _config(modules: Path, text: str) -> dict[str, Any]:
    return {
        "command": ["/var/tmp/vf-node/bin/node", f"{modules}/.bin/codex-acp"],
        "user_contents": [text],
        "mcp_urls": {},
        "mcp_headers": {},
        "system_prompt": "be brief",
        "session_meta": {},
        "client_capabilities": CAPABILITIES,
        "tool_interception": None,
    }


@contextmanager
def _runner(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """(send a packet, read a packet) to the spliced runner, as verifiers' host frames them."""
    env = {**_env(tmp_path), "CODEX_LOG": str(tmp_path / "codex.log"), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", RUNNER_SOURCE.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None

    def send(packet: dict[str, Any]) -> None:
        data = json.dumps(packet).encode()
        process.stdin.write(len(data).to_bytes(8, "big") + data)  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def read_exactly(size: int) -> bytes:  # unbuffered, so `select` sees every byte not yet read
        data = b""
        while len(data) < size:
            assert select.select([process.stdout], [], [], 30)[0], "the runner sent no packet in 30 s"
            chunk = os.read(process.stdout.fileno(), size - len(data))  # type: ignore[union-attr]
            assert chunk, "the runner closed its stdout"
            data += chunk
        return data

    def read() -> dict[str, Any]:
        return cast(dict[str, Any], json.loads(read_exactly(int.from_bytes(read_exactly(8), "big"))))

    try:
        yield send, read
        send({"id": 99, "operation": "shutdown"})
        assert read() == {"id": 99, "ok": True, "result": {"response_metadata": {}}}
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()


def _log(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = (tmp_path / "codex.log").read_text().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:] if line != "EOF"]


def test_codex_starts_as_the_launcher_starts_it_and_hears_what_the_adapter_says(tmp_path):
    modules = _modules(tmp_path)
    with _runner(tmp_path) as (send, read):
        send({"id": 1, "operation": "steer", "message": "early"})
        assert read()["result"] == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        for packet_id, text in ((2, "do the task"), (3, "again")):
            send({"id": packet_id, "operation": "prompt", "config": _config(modules, text)})
            assert read() == {
                "id": packet_id,
                "ok": True,
                "result": {
                    "reply": "final reply",
                    "stop_reason": "end_turn",
                    "response_metadata": {},
                    "update_metadata": [],
                },
            }
    start, read_lines = _log(tmp_path)
    assert start == {
        "argv": ["app-server"],
        "env": {
            "CODEX_MANAGED_BY_NPM": "1",
            "CODEX_HOME": str(tmp_path / "home"),
            "CODEX_MANAGED_PACKAGE_ROOT": str((modules / "@openai" / "codex").resolve()),
        },
    }
    requests = [line for line in read_lines if "method" in line]
    cwd, provider = (
        str(tmp_path),
        {
            "name": "Verifiers",
            "base_url": "http://127.0.0.1:9/v1",
            "wire_api": "responses",
            "http_headers": {"X-Client-Feature-ID": "codex", "Authorization": "Bearer s"},
        },
    )
    turn = {
        "threadId": "th-1",
        "approvalPolicy": "never",
        "approvalsReviewer": "user",
        "sandboxPolicy": {"type": "dangerFullAccess"},
        "summary": "auto",
        "effort": "high",
        "model": "known",
        "serviceTier": None,
    }
    assert [(r["method"], r["params"]) for r in requests] == [
        (
            "initialize",
            {
                "capabilities": {"experimentalApi": True, "requestAttestation": False},
                "clientInfo": {"name": "@agentclientprotocol/codex-acp", "version": "1.12.0", "title": "Codex ACP"},
            },
        ),
        ("account/read", {"refreshToken": False}),
        ("config/read", {"includeLayers": False}),
        ("skills/list", {"cwds": [cwd], "forceReload": True}),
        ("account/read", {"refreshToken": False}),
        (
            "thread/start",
            {
                "config": {
                    "model": "known",
                    "features": {"apps": False, "cwd_relative_turn_diffs": False},
                    "model_providers": {"custom-gateway": provider},
                    "projects": {cwd: {"trust_level": "trusted"}},
                },
                "modelProvider": "custom-gateway",
                "cwd": cwd,
            },
        ),
        ("model/list", {"cursor": None, "limit": None}),
        ("skills/list", {"cwds": [cwd]}),
        ("skills/list", {"cwds": [cwd], "forceReload": True}),
        (
            "turn/start",
            {
                **turn,
                "input": [
                    {"type": "text", "text": "(system)\nbe brief\n\n[user]\n", "text_elements": []},
                    {"type": "text", "text": "do the task", "text_elements": []},
                ],
            },
        ),
        ("skills/list", {"cwds": [cwd], "forceReload": True}),
        ("turn/start", {**turn, "input": [{"type": "text", "text": "again", "text_elements": []}]}),
    ]
    # The one server request (an approval Codex never asks in full access) is declined, not left hanging.
    assert [line for line in read_lines if "method" not in line] == [
        {"id": 900, "error": {"code": -32601, "message": "Method not found: item/commandExecution/requestApproval"}}
    ]


def test_a_failed_turn_comes_back_as_the_adapter_s_typed_failure_which_the_harness_raises(tmp_path):
    modules = _modules(tmp_path)
    with _runner(tmp_path) as (send, read):
        send({"id": 2, "operation": "prompt", "config": _config(modules, "fail now")})
        result = read()["result"]
    failure = {"category": "connection", "severity": "error", "title": "stream disconnected"}
    assert result == {
        "reply": "looking",
        "stop_reason": "end_turn",
        "update_metadata": [],
        "response_metadata": {"jetbrains": {"air": {"sessionFailure": failure}}},
    }
    with pytest.raises(RuntimeError, match="^Codex connection: stream disconnected$"):
        CodexHarness.acp_turn_result(cast(Any, None), cast(Any, None), ACPTurn(**result))


def test_steering_a_running_turn_goes_to_codex_as_the_adapter_sends_it(tmp_path):
    modules = _modules(tmp_path)
    with _runner(tmp_path) as (send, read):
        send({"id": 2, "operation": "prompt", "config": _config(modules, "wait here")})
        deadline = time.monotonic() + 30
        log = tmp_path / "codex.log"
        while not (log.exists() and '"turn/start"' in log.read_text()) and time.monotonic() < deadline:
            time.sleep(
                0.02
            )  # steering is for a running turn: before its session exists, the runner says "promptRequired"
        send({"id": 3, "operation": "steer", "message": "go on"})
        answers = {p["id"]: p for p in (read(), read())}
    assert answers[3]["result"] == {"outcome": "injected"}
    assert answers[2]["result"]["reply"] == "steered: go on"
    steer = [line for line in _log(tmp_path)[1] if line.get("method") == "turn/steer"]
    assert [s["params"] for s in steer] == [
        {
            "threadId": "th-1",
            "expectedTurnId": "tu-1",
            "input": [{"type": "text", "text": "go on", "text_elements": []}],
        }
    ]


def test_a_config_the_port_was_not_read_against_runs_the_adapter(tmp_path):
    modules = _modules(tmp_path)
    env, config = _env(tmp_path), _config(modules, "x")
    assert speaks_for_codex(config, env)
    preloaded = exit_on_eof_command(
        config["command"]
    )  # Arena's codex harness: the same adapter, an exit hook preloaded
    assert len(preloaded) == 3 and speaks_for_codex({**config, "command": preloaded}, env)
    for change in (
        {"command": [config["command"][0], str(modules).replace(CODEX_ACP_VERSION, "1.13.0") + "/.bin/codex-acp"]},
        {"command": ["/usr/bin/claude-agent-acp"]},
        {"client_capabilities": {}},
        {"session_meta": {"x": 1}},
        {"mcp_urls": {"tools": "http://127.0.0.1:9/mcp"}},
    ):
        assert not speaks_for_codex({**config, **change}, env), change
    for variable, value in (
        ("INITIAL_AGENT_MODE", "agent"),
        ("DEFAULT_AUTH_REQUEST", json.dumps({"methodId": "chatgpt"})),
        ("CODEX_CONFIG", json.dumps({"model": "m", "model_reasoning_effort": "low"})),
        ("CODEX_CONFIG", "{bad"),
        ("CODEX_PATH", "/usr/bin/codex"),
        ("MODEL_PROVIDER", "x"),
        ("npm_config_user_agent", "bun/1"),
    ):
        assert not speaks_for_codex(config, {**env, variable: value}), variable
    (modules / NATIVE).unlink()
    assert not speaks_for_codex(config, env)  # no native binary where the launcher looks
