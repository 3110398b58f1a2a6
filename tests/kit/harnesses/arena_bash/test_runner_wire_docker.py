"""In Arena's image, the lean runner sends what verifiers' baked bash chat program sends, byte for byte.

Both programs run in a throwaway container of the fault-localisation image (host network, so they
reach this process's recording model server, its `/tool` gate and a real MCP toolset process): the
reference is the image's own pre-synced bundle under its uv interpreter, the lean one is
`runner.py` under the image's `python3 -I`. Every request (model calls, the `/v1/models` probe, gate
calls) must match byte for byte: the scripted model seeds its tool-call ids on the body's bytes, so
one differing byte changes every later turn.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator

import pytest

from arena_kit.policy import Answer, CallTool, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit.mcp_session import running_toolset
from arena_testkit.lean_harness import FORBIDDEN, RUNNER, WireServer, serve_wire

pytestmark = pytest.mark.docker

IMAGE = "arena/fault-localisation:latest"
EVERYTHING = ScriptedPolicy(
    [
        RunShell("echo out; echo err >&2; printf 'caf\\xc3\\xa9 \\t tab\\n'; exit 3"),
        CallTool("note", {"text": "hello from the policy"}),
        RunShell("python3 -c \"print('é' * 15001); print('tail')\""),  # 30 kB: truncated mid-character
        RunShell("printf 'one two two' > f.txt"),
        CallTool("edit", {"path": "f.txt", "old_str": "two", "new_str": "2"}),  # found twice: an error
        CallTool("edit", {"path": "f.txt", "old_str": "one", "new_str": "1"}),
        CallTool("edit", {"path": "missing.txt", "old_str": "x", "new_str": "y"}),
        CallTool("edit", {"path": "f.txt", "old_str": "", "new_str": "y"}),
        RunShell(f"echo {FORBIDDEN} > bad.txt"),  # denied by the gate: must not run
        RunShell("cat f.txt; ls; ls /tmp"),
        Answer("DONE"),
    ]
)


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    with serve_wire({"arena/lean-everything": EVERYTHING}) as server:
        yield server


def _in_box(program: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `program` (a shell snippet ending in `"$@"`) with `args` in a fresh container."""
    command = [
        "docker",
        "run",
        "--rm",
        "--network",
        "host",
        "--label",
        "arena.managed=true",
        "-v",
        f"{RUNNER}:/opt/lean/runner.py:ro",
        "-w",
        "/app",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        program,
        "program",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_in_the_image_the_lean_runner_sends_the_baked_reference_programs_requests_byte_for_byte(
    wire_server: WireServer,
) -> None:
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    script = f"/tmp/vf-scripts/{hashlib.sha256(CHAT_PROGRAM_SOURCE.encode()).hexdigest()}.py"
    reference = f'exec "$(uv python find --script {script} --no-config --offline)" {script} "$@"'
    lean = 'exec python3 -I /opt/lean/runner.py "$@"'
    wires = {}
    with running_toolset("arena_smoke.toolset") as tools:
        for name, program in (("reference", reference), ("lean", lean)):
            args = [
                f"--base-url={wire_server.base_url}",
                "--api-key=rollout-secret",
                "--model=arena/lean-everything",
                "--bash",
                f"--tool-interception-url={wire_server.gate_url}",
                "--compaction",
                "--edit",
                "--system-prompt=You are a coding agent.",
                "--mcp-config=" + json.dumps({"mcpServers": {"smoke": {"url": tools.url(name), "timeout": 600.0}}}),
                "--prompt=Do the task.",
            ]
            done = _in_box(program, args)
            assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
            wires[name] = wire_server.take()
        assert tools.state("reference") == tools.state("lean") != {}

    ref, got = wires["reference"], wires["lean"]
    assert [(r["method"], r["path"], r["retry"]) for r in got] == [(r["method"], r["path"], r["retry"]) for r in ref]
    for index, (want, have) in enumerate(zip(ref, got)):
        assert have["body"] == want["body"], f"request {index} ({want['path']}) differs"
    last = json.loads([r for r in ref if r["path"] == "/v1/chat/completions"][-1]["body"])["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 10 and results[2].startswith("Warning: truncated output")
    assert "DENIED" in results[8] and "bad.txt" not in results[9] and results[9].startswith("1 two two")
