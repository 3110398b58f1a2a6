"""The stand-in's one way to reach Docker: the `docker` CLI, run without a shell, bounded, with stderr kept."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from dataclasses import dataclass

MANAGED_LABEL = "arena.managed=true"
STANDIN_LABEL = "arena.prime-standin"
"""Label key whose value is the stand-in's session id; `docker ps --filter label=arena.prime-standin`
finds every box a stand-in started."""
CALL_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Result:
    code: int
    stdout: bytes
    stderr: bytes


async def docker(*args: str, stdin: bytes | None = None, timeout: float = CALL_TIMEOUT_S) -> Result:
    """Run `docker ARGS`, feeding `stdin`; the child is killed on timeout or cancellation."""
    proc = await asyncio.create_subprocess_exec(
        "docker",
        *args,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return Result(proc.returncode or 0, out, err)


def run_argv(session: str, name: str, image: str, cpu: float, memory_gb: float, env: dict[str, str]) -> list[str]:
    """`docker run` for one sandbox: labelled for reaping, limits mapped, kept alive by `sleep`, and
    `/tmp` an empty tmpfs as on a Prime VM (it hides whatever the image put there)."""
    argv = [
        "run",
        "-d",
        "--name",
        name,
        "--label",
        MANAGED_LABEL,
        "--label",
        f"{STANDIN_LABEL}={session}",
        "--cpus",
        f"{cpu:g}",
        "--memory",
        f"{int(memory_gb * 1024)}m",
        "--tmpfs",
        "/tmp",
        "--entrypoint",
        "sleep",
    ]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    return [*argv, image, "infinity"]


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def remove_session_boxes(session: str) -> None:
    """Synchronously remove every container this stand-in session started (shutdown backstop)."""
    try:
        listed = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label={STANDIN_LABEL}={session}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if ids := listed.stdout.split():
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, timeout=120, check=False)
    except (
        OSError,
        subprocess.TimeoutExpired,
    ):  # no engine (a test without boxes) or a hung one: labels remain for `arena reap`
        pass
