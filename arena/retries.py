"""The infrastructure faults Arena's evals retry, as verifiers whole-episode `[env.retries]` rules.

verifiers reruns the whole episode while it ends with an error a rule matches
(`verifiers.v1.utils.retries.run_episode_with_retry`: it scans the episode's own errors, then the
errors of its failed traces), waiting `backoff(attempt)` between attempts: min(0.5 · 2^attempt,
30) s times a jitter in [0.5, 1.5). An Arena episode has one agent, so a retry is the same rollout
re-rolled in a fresh box, whichever docker path provisioned it: verifiers' own runtime (the box
belongs to the rollout) or Arena's lean one (`arena_kit.envs.lean.LeanEnv` starts the box and lends
it to the rollout, and verifiers never retries an agent in a borrowed box, so per-agent
`[env.agent.retries]` rules would not protect it). Each rule has its own budget per episode; an
error that matches no rule is never retried (`max_retries = 0`), so an agent's or a grader's own
outcome stands: a wrong answer or a denial is no error at all, a stage deadline is a timeout (not
an error), a harness or task exception is a `HarnessError`/`TaskError`, a sandbox error a
grader provoked (a read of a file the agent never wrote) names no lost engine or box, and a box the
agent broke itself (an OOM kill, its runner killed in a running box) is `BoxOomError` or
`AgentKilledBoxError` (`arena_kit.box.faults`), which no rule names.

On Arena's lean path (`arena_kit.runtimes.lean_docker`) the infrastructure faults are types, matched
by class name alone: the lean runtime raises `EngineUnreachableError`, `BoxLostError` or
`StartMissedError` (verifiers `SandboxError` subclasses) only on the engine's own word, so no text, in
any exception or in the box's output, can buy their budget.

verifiers' own (stock) runtime does not type its errors, so its faults keep anchored message patterns,
on the messages verifiers 0.4.0 records, provoked on this machine:
- engine down at provisioning (`DOCKER_HOST` at a dead socket, dockerd restarting): "docker
  runtime selected but the engine is not reachable: ...", a `RuntimeError` on the trace;
- the same mid-rollout (an exec, read or write while the daemon is away): `SandboxError` carrying
  the docker CLI's "Cannot connect to the Docker daemon" / "error during connect";
- the box gone under a running harness (container removed, or killed by a daemon restart):
  `SandboxError` "runtime died under harness 'bash' (exit 137): ..." (also on a lean box under an
  ACP harness: verifiers writes it after the lean runtime's engine-side `alive()`); later calls into
  it: "No such container" / "is not running" (the daemon's own words);
- a live harness (claude_code, codex) that missed verifiers' fixed 5 s start handshake on a loaded
  engine: `SandboxError` "container live process failed to start: ..." (`arena.vf_hooks` makes it
  rarer, not impossible: the harness program is verifiers', so no agent has acted yet);
- the model server down or reset: `ProviderError` with status 503 (verifiers maps every transport
  fault, connection refused or reset, to 503: "All connection attempts failed", "Server
  disconnected ..."); an upstream 503 is the server saying it is unavailable, the same fault.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["INFRA_RULES", "LIVENESS_FAULTS", "RetryRule", "retries_table", "without_liveness"]


class RetryRule(BaseModel):
    """One verifiers `RetryRule`: every given field must match (`message` is a regex search)."""

    model_config = ConfigDict(frozen=True)

    fault: str
    """What went wrong, for people (not sent to verifiers)."""
    type: str
    """The recorded exception class name."""
    message: str | None = None
    status_code: tuple[int, ...] | None = None
    max_retries: int = Field(ge=1)
    """Retries per episode for this fault."""

    def table(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"type": self.type, "max_retries": self.max_retries}
        if self.message is not None:
            rule["message"] = self.message
        if self.status_code is not None:
            rule["status_code"] = list(self.status_code)
        return rule


# Every pattern is anchored at the start of the message, to a prefix verifiers writes on the host:
# the rest of a message can quote output from inside the box, which the agent controls. Where the
# prefix alone cannot tell (a failed in-box `read`/`write`, "runtime died under harness"), the
# engine is asked first (`arena.vf_hooks`): a box that is still running gets an error no rule
# matches ("in the running box: ..."), so only a box the engine reports dead or unreachable is retried.
# The lean runtime writes none of these words; its faults are matched by type.
_HOST_OP = r"(?:\w+ (?:run|background process|environment inspection|workdir setup|network cut|proxy listener) failed|container background process failed|read '.*?'|write '.*?')"
ENGINE_AT_START = r"^\w+ runtime selected but the engine is not reachable"
ENGINE_GONE = "^" + _HOST_OP + r": .*?(?:Cannot connect to the Docker daemon|error during connect)"
BOX_GONE = (
    r"^runtime died under harness '[^']+' \(exit -?\d+\)|^"
    + _HOST_OP
    + r": Error(?: response from daemon)?: (?:No such container|[Cc]ontainer \S+ is not running)"
)
START_MISSED = (
    r"^container live process failed to start|^container client exited with code -?\d+ before reporting its PID"
)

INFRA_RULES: tuple[RetryRule, ...] = (
    # Seven retries wait about 60 s in all (31-92 s): a daemon restart by images/ensure-docker.sh
    # takes a few seconds, on a loaded machine several times that.
    RetryRule(fault="engine unreachable at provisioning", type="RuntimeError", message=ENGINE_AT_START, max_retries=7),
    RetryRule(fault="engine unreachable mid-rollout", type="SandboxError", message=ENGINE_GONE, max_retries=7),
    RetryRule(fault="sandbox died or lost", type="SandboxError", message=BOX_GONE, max_retries=3),
    RetryRule(fault="harness start missed its deadline", type="SandboxError", message=START_MISSED, max_retries=3),
    # The lean runtime's typed faults (`arena_kit.errors`), spelled here by class
    # name: `arena --help` imports this module and must not import the kit's docker stack.
    RetryRule(fault="engine unreachable, lean box", type="EngineUnreachableError", max_retries=7),
    RetryRule(fault="box lost, lean box", type="BoxLostError", max_retries=3),
    RetryRule(fault="harness start missed its deadline, lean box", type="StartMissedError", max_retries=3),
    RetryRule(fault="model server unreachable or reset", type="ProviderError", status_code=(503,), max_retries=5),
)
"""The faults an eval retries, first match wins; anything else is kept as the episode's outcome."""


def retries_table(rules: tuple[RetryRule, ...] = INFRA_RULES) -> dict[str, Any]:
    """The `[env.retries]` table for `rules` (errors no rule matches are not retried)."""
    return {"max_retries": 0, "rules": [rule.table() for rule in rules]}


LIVENESS_FAULTS = frozenset({"engine unreachable mid-rollout", "sandbox died or lost"})
"""The stock runtime's rules whose errors a box could forge without engine-side liveness
(`arena.vf_hooks`): a replaced `true` reads as a dead box, a replaced `cat` prints "No such container"
or "Cannot connect to the Docker daemon" into a failed read's message. An eval whose hook cannot
install drops them (fails closed): a lost box is then the episode's outcome, never a bought re-roll.
The lean runtime's typed rules stay: it answers liveness itself, from the engine."""


def without_liveness(table: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`table` without the rules of `LIVENESS_FAULTS` (matched on type and message), and the faults dropped."""
    forgeable = {(rule.type, rule.message): rule.fault for rule in INFRA_RULES if rule.fault in LIVENESS_FAULTS}
    kept, dropped = [], []
    for rule in table.get("rules") or []:
        fault = forgeable.get((rule.get("type"), rule.get("message")))
        if fault is None:
            kept.append(rule)
        else:
            dropped.append(fault)
    return {**table, "rules": kept}, dropped
