"""verifiers' codex harness without the ~2 s every rollout waited after its final reply.

When a rollout ends, verifiers' ACP runner closes codex-acp's stdin and waits up to 2 s for it to
exit before it sends SIGTERM (agent-client-protocol 0.12.1, `spawn_stdio_transport(shutdown_timeout
=2.0)`). codex-acp 1.12.0 does not exit on that EOF: it ends Codex's stdin and arms a 2 s timer that
nothing clears (`process.stdin.on("close")` near the end of its `dist/index.js`), and Codex's app
server itself takes ~2.2 s to exit on EOF or SIGTERM. Measured in the harness image: codex-acp exits
2.3-2.9 s after its stdin closes (claude-agent-acp: 0.02 s).

By then the session is over (the runner has had `session/close` answered) and the harness deletes
Codex's home right after (`CodexHarness.cleanup`), so nothing waits for what Codex does in those
seconds. `EXIT_ON_EOF` is preloaded into codex-acp's node (`--import`): Codex is started in its own
process group, and when stdin closes that group is killed and codex-acp exits (0.02 s).

Only on the versions this was read against (verifiers `VERIFIERS_VERSION`, codex-acp `ACP_VERSION`, both in
`arena_kit.verifiers_seam`, and the
`[node, codex-acp]` command): otherwise the command is left as verifiers builds it, with a warning.
`tests/kit/harnesses/test_codex.py` pins all three.
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import Any
from urllib.parse import quote

from verifiers.v1.harnesses.codex import harness as codex_harness

from arena_kit.verifiers_seam import CODEX_ACP_VERSION, VERIFIERS_VERSION

__all__ = ["ACP_VERSION", "EXIT_ON_EOF", "ArenaCodexHarness", "exit_on_eof_command"]

ACP_VERSION = CODEX_ACP_VERSION
"""The codex-acp release whose shutdown was read (verifiers `VERIFIERS_VERSION` installs this one)."""

EXIT_ON_EOF = """\
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
const live = new Set();
let stdinClosed = false;
const exitIfDone = () => { if (stdinClosed && live.size === 0) process.exit(0); };
const spawn = childProcess.spawn;
childProcess.spawn = function (command, args, options) {
  if (!Array.isArray(args)) { options = args; args = []; }
  const child = spawn.call(this, command, args, { ...options, detached: true });
  live.add(child);
  child.once("exit", () => { live.delete(child); exitIfDone(); });
  return child;
};
syncBuiltinESMExports();
const killChildren = () => { for (const child of live) { try { process.kill(-child.pid, "SIGKILL"); } catch {} } };
process.stdin.once("close", () => {
  stdinClosed = true;
  killChildren();
  setImmediate(exitIfDone);
});
process.once("exit", killChildren);
for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130], ["SIGHUP", 129]]) {
  process.once(signal, () => { killChildren(); process.exit(code); });
}
"""
"""Preloaded into codex-acp: children in their own process group; on stdin EOF, kill them and exit.
The groups are out of reach of a signal to codex-acp's own group (verifiers' terminate and kill of
the runner), so codex-acp also kills them when it exits or is signalled."""

logger = logging.getLogger(__name__)


def exit_on_eof_command(command: list[str]) -> list[str]:
    """verifiers' `[node, codex-acp]` with the preload added, or `command` as it is when verifiers,
    codex-acp or the command's shape are not the ones this was written against."""
    found = version("verifiers")
    shaped = (
        len(command) == 2
        and command[0].endswith("/node")
        and command[1].endswith(f"-{ACP_VERSION}/acp/node_modules/.bin/codex-acp")
    )
    if found != VERIFIERS_VERSION or codex_harness.ACP_VERSION != ACP_VERSION or not shaped:
        logger.warning(
            "codex harness: verifiers %s, codex-acp %s, command %s: not the ones arena_kit.harnesses."
            "codex was written for; codex rollouts keep their ~2 s shutdown wait",
            found,
            codex_harness.ACP_VERSION,
            command,
        )
        return command
    return [command[0], f"--import=data:text/javascript,{quote(EXIT_ON_EOF)}", command[1]]


class ArenaCodexHarness(codex_harness.CodexHarness):  # type: ignore[misc]  # verifiers ships no types
    """verifiers' codex harness whose agent process exits as soon as the runner closes its stdin."""

    async def prepare_acp(self, *args: Any, **kwargs: Any) -> Any:
        config = await super().prepare_acp(*args, **kwargs)
        config.command = exit_on_eof_command(list(config.command))
        return config
