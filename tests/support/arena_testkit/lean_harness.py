"""Helpers of the lean harness tests: a recording model server with a tool gate, and a way to run
either chat program (verifiers' bundled one, or the lean runner) on the host against it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from arena.policies import PolicyResolver
from arena.server import build_app
from arena_kit.harnesses.arena_bash.harness import RUNNER_SOURCE
from arena_kit.policy import Policy
from arena_testkit.thread_server import serve_in_thread


def _written_runner() -> Path:
    """The bundled in-box program as a file: named by its hash, written once (atomically: workers race)."""
    path = Path(tempfile.gettempdir()) / f"arena-bash-runner-{hashlib.sha256(RUNNER_SOURCE).hexdigest()[:16]}.py"
    if not path.exists():
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(RUNNER_SOURCE)
        partial.replace(path)
    return path


RUNNER = _written_runner()
"""The program `arena-bash` writes into each box, run on the host by the wire tests and mounted by the docker ones."""
FORBIDDEN = "ARENA-FORBIDDEN"
DENIAL = "DENIED by the lean test gate."
START_DEADLINE_S = 10.0


@dataclass
class WireServer:
    """Every request the programs sent (model calls, model list, gate), in order."""

    url: str = ""
    log: list[dict] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def gate_url(self) -> str:
        return f"{self.url}/tool"

    def take(self) -> list[dict]:
        taken, self.log = self.log, []
        return taken


def _app(server: WireServer, policies: Mapping[str, Policy]) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler):  # type: ignore[no-untyped-def]
        body = await request.read()
        server.log.append(
            {
                "method": request.method,
                "path": request.path,
                "body": body.decode(),
                "retry": request.headers.get("x-stainless-retry-count"),
            }
        )
        return await handler(request)

    async def gate(request: web.Request) -> web.Response:
        call = await request.json()
        if FORBIDDEN in json.dumps(call.get("arguments")):
            message = {"role": "tool", "tool_call_id": call["tool_call_id"], "content": DENIAL, "name": call["name"]}
            return web.json_response({"action": "deny", "message": message})
        return web.json_response({"action": "allow"})

    app = build_app(PolicyResolver(policies))
    app.middlewares.append(record)
    app.router.add_post("/tool", gate)
    return app


@contextmanager
def serve_wire(policies: Mapping[str, Policy]) -> Iterator[WireServer]:
    """A model server playing `policies`, recording every request, with a tool gate at `/tool`."""
    server = WireServer()
    with serve_in_thread(_app(server, policies), START_DEADLINE_S) as url:
        server.url = url
        yield server


def reference_program(tmp: Path) -> list[str]:
    """verifiers' bundled chat program, run with this venv's Python (it has the SDKs the bundle needs)."""
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

    path = tmp / "vf-chat-program.py"
    path.write_text(CHAT_PROGRAM_SOURCE)
    return [sys.executable, "-W", "ignore", str(path)]


def lean_program() -> list[str]:
    return [sys.executable, "-I", str(RUNNER)]


def run_program(
    program: list[str], args: list[str], workdir: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run([*program, *args], cwd=workdir, capture_output=True, text=True, timeout=timeout)
