"""The lean runner against verifiers' bash chat program, on the host: requests and exit codes.

Here the reference runs with this venv's openai 2.x, which orders body keys differently from the
openai 3.x baked into Arena's images (what the runner copies), so bodies are compared parsed; the
byte-for-byte comparison against the baked reference is `test_runner_wire_docker.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
import socket
from pathlib import Path

import pytest

from arena_kit.policy import Answer
from arena_kit.scripted import ScriptedPolicy

from arena_testkit.lean_harness import WireServer, lean_program, reference_program, run_program, serve_wire

POLICIES = {"arena/lean-answer": ScriptedPolicy([Answer("at once")])}


@pytest.mark.slow
def test_lean_runner_without_tools_or_compaction_matches_too(wire_server: WireServer, tmp_path: Path) -> None:
    args = [f"--base-url={wire_server.base_url}", "--api-key=k", "--model=arena/lean-answer", "--bash", "--prompt=hi"]
    ref = run_program(reference_program(tmp_path), args, tmp_path / "ref")
    ref_wire = wire_server.take()
    lean = run_program(lean_program(), args, tmp_path / "lean")
    assert (ref.returncode, lean.returncode) == (0, 0)
    assert [json.loads(r["body"]) for r in wire_server.take()] == [json.loads(r["body"]) for r in ref_wire]
    assert [r["path"] for r in ref_wire] == ["/v1/chat/completions"]  # no compaction: no model-list probe


@pytest.mark.slow
def test_an_unreachable_model_exits_with_the_transport_code_like_the_reference(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: connections are refused
    args = [f"--base-url=http://127.0.0.1:{port}/v1", "--api-key=k", "--model=m", "--bash", "--prompt=hi"]
    ref = run_program(reference_program(tmp_path), args, tmp_path / "ref")
    lean = run_program(lean_program(), args, tmp_path / "lean")
    assert ref.returncode == lean.returncode == 97, (ref.stderr[-500:], lean.stderr[-500:])


@pytest.mark.slow
def test_an_unknown_model_fails_the_program_like_the_reference(wire_server: WireServer, tmp_path: Path) -> None:
    args = [f"--base-url={wire_server.base_url}", "--api-key=k", "--model=arena/nobody", "--bash", "--prompt=hi"]
    ref = run_program(reference_program(tmp_path), args, tmp_path / "ref")
    ref_wire = wire_server.take()
    lean = run_program(lean_program(), args, tmp_path / "lean")
    assert ref.returncode == lean.returncode == 1
    assert "Error code: 404" in ref.stderr and "Error code: 404" in lean.stderr
    assert [json.loads(r["body"]) for r in wire_server.take()] == [json.loads(r["body"]) for r in ref_wire]


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    with serve_wire(POLICIES) as server:
        yield server
