"""A harness's in-box program started with its pooled box: interpreter up and modules imported before the claim.

A warm pool takes a box's create and start off a rollout's critical path; what stays on it for
`arena-bash` is one exec and the runner's Python start (interpreter, imports, compile: about 0.1 s
of a 0.3 s rollout on a quiet 2-core machine). A pooled box whose spec names a program starts it
right after its boot: `python3 -I -c HOST` as the rollout's agent user (the exec's own process, which
prints its PID as a live process's wrapper would), which reads the program's
source (one JSON line), compiles and runs it as a module (not `__main__`: its imports run, its
entry point does not), says `ready`, and blocks on its stdin. The rollout's harness then sends the
run (argv, env, workdir: one more line) and closes stdin; the host sets them as the harness's exec
would (the env over the box's own, `PWD` as that exec's `sh` exports it, stdin from /dev/null,
`sys.argv[0]` the program's path) and calls the program's `main(args)`. Output, exit code and the engine's word on a failure reach the
harness as from that exec (`LeanDockerRuntime.run_prestarted`).

A program is used once, by the rollout that claimed its box, as the user it was started as, and
only if it is the very source the harness would run (compared by digest): anything else kills it and
the harness runs its exec as before; the box's removal ends one never asked. It costs no CPU while it
waits. Where it differs from the exec, by design: its tracebacks name `<arena prestarted program>`
(no source lines), its argv travels on stdin (no 128 KiB limit per argument, and no secret in the
box's `/proc/*/cmdline`), and its user's groups and `python3` are the ones the box had at boot.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes import ProgramResult

from arena_kit.runtimes.lean_docker.process import BoxProcess

__all__ = ["HOST", "READY", "Prestarted", "load", "run"]

READY = b"arena-prestart-ready\n"
"""The host's line once the program is compiled and its imports ran (first on stdout, never the program's)."""
LOAD_DEADLINE_S = 30.0
"""From the host's start to its ready line (a slow, loaded machine; a quiet one takes ~0.1 s)."""

HOST = r"""
import json, os, sys
sys.stdout.write(f"{os.getpid()}\n")
sys.stdout.flush()
load = json.loads(sys.stdin.readline())
program = {"__name__": "arena_prestarted", "__builtins__": __builtins__}
exec(compile(load["source"], load["name"], "exec"), program)
sys.stdout.buffer.write(@READY@)
sys.stdout.flush()
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
order = json.loads(line)
os.environ.update(order["env"])
os.chdir(order["cwd"])
os.environ.setdefault("PWD", order["cwd"])
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
sys.argv = [order["path"], *order["args"]]
program["main"](order["args"])
""".replace("@READY@", repr(READY))
"""The in-box host, run as `python3 -I -c HOST` (stdlib only)."""


@dataclass(frozen=True)
class Prestarted:
    """A loaded program waiting in its box for its run."""

    process: BoxProcess
    digest: str
    """sha256 of the program's source."""
    user: str | None
    """The user it runs as (None: the box's default)."""


def digest(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


async def load(process: BoxProcess, source: bytes, name: str, user: str | None) -> Prestarted:
    """Send `source` to a started host and wait for its ready line.

    Raises:
        SandboxError: the host ended, or said anything else, before it was ready.
        TimeoutError: no ready line within `LOAD_DEADLINE_S`.
    """
    await process.write(json.dumps({"source": source.decode(), "name": name}).encode() + b"\n")
    said = bytearray()

    async def ready() -> None:
        # One chunk at a time, never leaving the iterator: the program's own output comes after.
        while len(said) < len(READY):
            try:
                said.extend(await anext(process.stdout))
            except StopAsyncIteration:
                break
        if bytes(said) != READY:
            raise SandboxError(
                f"prestart: the program's host said {bytes(said)[:200]!r}, not ready "
                f"(stderr: {process.stderr_text()[-500:] or 'none'})"
            )

    await asyncio.wait_for(ready(), LOAD_DEADLINE_S)
    return Prestarted(process, digest(source), user)


async def run(prestarted: Prestarted, path: str, args: list[str], env: dict[str, str], cwd: str) -> ProgramResult:
    """Run the loaded program with `args` as `path` would run (the exec's env and workdir), to its end."""
    process = prestarted.process
    out, err = bytearray(), bytearray()

    async def drain(stream: AsyncIterator[bytes], into: bytearray) -> None:
        async for chunk in stream:
            into.extend(chunk)

    try:
        await process.write(json.dumps({"path": path, "args": args, "env": env, "cwd": cwd}).encode() + b"\n")
        await process.close_stdin()
        await asyncio.gather(drain(process.stdout, out), drain(process.stderr, err))
        code = await process.wait()
    except BaseException:
        with contextlib.suppress(BaseException):
            await process.abort()
        raise
    return ProgramResult(code, out.decode(errors="replace"), err.decode(errors="replace"))
