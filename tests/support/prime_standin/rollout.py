"""Run one episode in process on verifiers' real prime runtime against a running stand-in.

In process so that exactly one boundary can be swapped: `PrimeTunnel` in `verifiers.v1.mcp.launch`
becomes `BridgeTunnel` (see `tunnel.py`) for the duration of the episode. Model traffic needs no
shim: the interception uses verifiers' own custom tunnel bound on all interfaces and reached at
the docker bridge address.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.mcp import launch

from prime_standin.tunnel import BridgeTunnel

API_KEY_VAR = "ARENA_MODEL_KEY"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


def env_config(
    taskset: dict[str, Any], harness: str, image: str, bridge: str, runtime: str = "prime"
) -> dict[str, Any]:
    """An env config whose interception a remote box reaches at `bridge` (a local runtime ignores it)."""
    port = free_port()
    return {
        "taskset": taskset,
        "interception": {
            "type": "server",
            "tunnel": {"type": "custom", "url": f"http://{bridge}:{port}", "port": port},
        },
        "agent": {"harness": {"id": harness}, "runtime": {"type": runtime, "image": image}, "max_turns": 40},
    }


async def _run(config: dict[str, Any], model: str, model_url: str) -> vf.Episode:
    env = vf.load_environment(vf.resolve_env_config(config))
    task = next(iter(env.taskset))
    client = vf.EvalClientConfig(base_url=model_url.rstrip("/") + "/v1", api_key_var=API_KEY_VAR)
    async with env.serving():
        return await env.run_episode(task, vf.ModelContext(model=model, client=client))


def run_episode(config: dict[str, Any], model: str, model_url: str, bridge: str) -> vf.Episode:
    """One episode of the config's first task; host-side MCP servers reach the box via `BridgeTunnel`."""
    original = launch.PrimeTunnel
    BridgeTunnel.host = bridge
    launch.PrimeTunnel = BridgeTunnel
    try:
        return asyncio.run(_run(config, model, model_url))
    finally:
        launch.PrimeTunnel = original
