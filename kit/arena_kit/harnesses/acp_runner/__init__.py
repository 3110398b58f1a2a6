"""Arena's stdlib ACP runner (`program`) and the one verifiers runner it stands in for on the lean docker path.

verifiers' ACP harnesses (claude_code, codex) hand their in-box runner to `Runtime.prepare_uv_script`
as a PEP 723 script on `agent-client-protocol` and `httpx`. The lean runtime
(`arena_kit.runtimes.lean_docker.runtime`) recognises that script by its digest and runs `program`
instead, on the image's `python3 -I`: same packets to the host, same ACP messages to the agent, a
fraction of the CPU. Any other script, a later verifiers runner included, runs as verifiers wrote it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from arena_kit.harnesses.arena_bash.bundle import bundle

__all__ = ["ARGV", "INTERPRETER", "REPLACES_SHA256", "RUNNER_MODULES", "RUNNER_SOURCE", "replaces"]

RUNNER_MODULES = ("claude_stream", "codex_stream", "program")
"""Splice order (`arena_bash.bundle`): Claude Code and Codex without their node adapters, then `program`."""
RUNNER_SOURCE = bundle(Path(__file__).parent, __name__, RUNNER_MODULES)
"""The in-box program, run (its source in the argv: `python3 -I -c`) in each box that runs an ACP harness."""
REPLACES_SHA256 = "b05b20d148167838e98e285e8d489d215db24daa558f5029d1c0d368492d8e42"
"""verifiers 0.4.0's `acp/runner.py` (`verifiers.v1.acp.ACP_SOURCE`), the runner `program` was compared against."""
INTERPRETER = ("python3", "-I")
"""The image's own Python, isolated: no user site, no PYTHON* variables, no cwd on sys.path."""
ARGV = (*INTERPRETER, "-c", RUNNER_SOURCE.decode())
"""How a box runs it: its source in the argv, so no exec writes it and no file of it exists to rewrite."""


def replaces(script: bytes) -> bool:
    """Whether `script` is the verifiers runner this program stands in for."""
    return hashlib.sha256(script).hexdigest() == REPLACES_SHA256
