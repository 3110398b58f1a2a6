"""Measures sqlite_sandbox tool-call latency and host CPU against a live container (a checkout script, not shipped).

Usage: PYTHONPATH=tests/support .venv/bin/python runtime_bench/measure/sqlite_calls.py [--calls 50] [--image arena/schema-migration:latest]
Starts one labelled container, serves the toolset in this process behind an in-memory MCP client
(the real tools, argument checks, per-rollout lock and state channel), runs `execute("SELECT 1")`
N times in one event loop as a served toolset would, prints median/p90 wall time per call and the
host CPU (this process plus its children, e.g. `docker exec` clients) per call, then removes it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from arena_testkit.mcp_memory import serving_toolset
from sqlite_sandbox.state import SandboxConfig, SandboxState, checkpoint_path
from sqlite_sandbox.toolset import SqliteSandboxToolset

LABELS = ["--label", "arena.managed=true", "--label", f"arena.session=measure-sqlite-{os.getpid()}"]


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _state(container: str) -> SandboxState:
    fields = SandboxState.model_fields
    if "container_id" in fields:  # the Docker-SDK toolset this replaced
        return SandboxState(container_id=container)
    from verifiers.v1.runtimes import DockerRuntimeInfo

    return SandboxState(box=DockerRuntimeInfo(id=container))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--image", default="arena/schema-migration:latest")
    args = parser.parse_args()
    container = subprocess.run(
        ["docker", "run", "-d", *LABELS, "--network", "none", "--entrypoint", "sleep", args.image, "infinity"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()[:12]  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "db.sqlite"
            conn = sqlite3.connect(db)
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            conn.commit()
            conn.close()
            state = _state(container)
            for path in (state.db_path, checkpoint_path(state.checkpoint_dir, "start")):
                subprocess.run(["docker", "exec", container, "mkdir", "-p", str(Path(path).parent)], check=True)
                subprocess.run(["docker", "cp", str(db), f"{container}:{path}"], check=True, capture_output=True)
        state.statement_budget = args.calls + 1
        with serving_toolset(SqliteSandboxToolset(SandboxConfig())) as server:

            async def run() -> tuple[list[float], float]:
                walls: list[float] = []
                async with server.client("bench", state.model_dump(mode="json")) as client:
                    warm = await client.call_tool("execute", {"sql": "SELECT 1"})
                    assert not warm.is_error, warm
                    cpu = _cpu()
                    for _ in range(args.calls):
                        start = time.perf_counter()
                        result = await client.call_tool("execute", {"sql": "SELECT 1"})
                        walls.append(time.perf_counter() - start)
                        assert not result.is_error, result
                    return walls, _cpu() - cpu

            walls, cpu = asyncio.run(run())
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    walls.sort()
    print(
        f"{args.calls} execute calls: median {statistics.median(walls) * 1000:.0f} ms, "
        f"p90 {walls[int(len(walls) * 0.9)] * 1000:.0f} ms, host CPU {cpu / args.calls * 1000:.0f} ms/call"
    )


if __name__ == "__main__":
    main()
