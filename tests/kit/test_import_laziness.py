"""Start-up cost guards: host-side modules import no verifiers, and a tool server serves without verifiers' full stack.

Each check runs a fresh interpreter, since the test process itself may have verifiers loaded. The
checks name modules, never seconds: they fail when a change brings an eager heavy import back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

SERVER_START_S = 120
"""Bound on a tool server's start under a loaded machine (it takes ~1.5 CPU-s)."""
FULL_STACK = (
    "anthropic",
    "sympy",
    "math_verify",
    "verifiers.v1.acp",
    "verifiers.v1.clients",
    "verifiers.v1.judge",
    "verifiers.v1.interception",
    "verifiers.v1.mcp.launch",
)
"""What `import verifiers.v1` pulled into every tool server (about 2 of its 3.5 CPU-s): the ACP and model
clients, the judges and the launcher. A server serves without any of them."""
TOOLS = {
    "log_search.toolset": {"list_services", "search_logs", "count_logs", "budget", "submit_root_cause"},
    "sqlite_sandbox.toolset": {"execute", "rollback", "checkpoint", "restore", "schema", "budget", "submit_migration"},
}


def _loaded(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "module",
    [
        "sqlite_sandbox",
        "sqlite_sandbox.engine",
        "sqlite_sandbox.render",
        "log_search",
        "log_search.store",
        "arena_kit.rewrite.hook",
        "arena_kit.records",
    ],
)
def test_host_side_modules_import_no_verifiers(module: str) -> None:
    loaded = _loaded(f"import {module}")
    assert module in loaded
    assert "verifiers" not in loaded, f"importing {module} imports verifiers (~3.5 CPU-s)"


@pytest.mark.slow
def test_sqlite_sandbox_still_exports_its_state_names() -> None:
    loaded = _loaded(
        "from sqlite_sandbox import SandboxConfig, SandboxState, START, checkpoint_path\n"
        "import sqlite_sandbox.state as s\nassert SandboxState is s.SandboxState and START == s.START"
    )
    assert "sqlite_sandbox.state" in loaded


def _serve_and_list(module: str, tmp_path: Path) -> tuple[set[str], set[str]]:
    """Launch `module` as verifiers does (`python -m`), list its tools over HTTP; (tools, modules it imported)."""
    port_file, imports = tmp_path / "port", tmp_path / "importtime.txt"
    env = {**os.environ, "VF_CONFIG": "{}", "MCP_PORT_FILE": str(port_file), "VF_STATE_URL": "", "VF_STATE_SECRET": ""}
    with open(imports, "w") as err:
        server = subprocess.Popen([sys.executable, "-X", "importtime", "-m", module], env=env, stderr=err)
    try:
        deadline = time.monotonic() + SERVER_START_S
        reply = None
        while reply is None and time.monotonic() < deadline and server.poll() is None:
            port = port_file.read_text().strip() if port_file.exists() else ""
            try:
                reply = (
                    httpx.post(
                        f"http://127.0.0.1:{port}/mcp",
                        timeout=10,
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                        headers={"Accept": "application/json, text/event-stream"},
                    )
                    if port
                    else None
                )
            except httpx.TransportError:
                reply = None
            if reply is None:
                time.sleep(0.1)
        assert reply is not None, (
            f"{module} did not serve within {SERVER_START_S} s (exit {server.poll()}):\n" + imports.read_text()[-2000:]
        )
        reply.raise_for_status()
        tools = {tool["name"] for tool in reply.json()["result"]["tools"]}
    finally:
        server.terminate()
        server.wait(30)
    modules = {
        line.rpartition("|")[2].strip() for line in imports.read_text().splitlines() if line.startswith("import time:")
    }
    return tools, modules


@pytest.mark.parametrize("module", sorted(TOOLS))
@pytest.mark.slow
def test_a_tool_server_serves_without_verifiers_full_stack(module: str, tmp_path: Path) -> None:
    tools, modules = _serve_and_list(module, tmp_path)
    assert tools == TOOLS[module]
    assert "verifiers.v1.mcp.server" in modules and "mcp" in modules  # really imported, and recorded
    assert not set(FULL_STACK) & modules, f"{module} imported {sorted(set(FULL_STACK) & modules)} before serving"
