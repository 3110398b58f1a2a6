"""Faults an agent makes of its own box, as types, and the one rule that tells them from the host's.

A harness that dies in its box ended, until now, as a `HarnessError` (`harness_error`) or, when the
box stopped, as a lost box that a retry rule re-rolled: either way the platform's failure. Two of
those ends are the agent's doing, and are typed here so they end with their own stop condition
(verifiers writes `<class name without Error, lowercased>_error`), score 0, match no retry rule
(`arena.retries` matches by exact class name) and count against the agent (`arena.traces.AGENT_STOPS`):

- `BoxOomError` (`boxoom_error`): the box ran out of memory. The engine reports the box OOM-killed
  (`State.OOMKilled`), or the box's memory cgroup, read on the host, counted an OOM kill, and the
  harness died with it. Memory in the box is the agent's to spend: the harness is the engine's.
- `AgentKilledBoxError` (`agentkilledbox_error`): in a box the engine reports running, with no OOM
  kill, the harness's runner died by a kill signal (`KILL_SIGNALS`: exit 128+N, or -N): the kernel
  sent none, the engine signals only PID 1, and the host stops whole boxes, so only a process in the
  box (`kill -9 $PPID`, `kill -9 -1`) sent it. An ACP harness (claude_code, codex) runs as a live
  process whose exit code never reaches the failure; its failure is the agent's when it came while
  the agent's own tool call ran (the model's last message, as the host recorded it, is a tool call
  with no result): the box broke under something the agent ran.

- `BoxOverBoundError` (`boxoverbound_error`): the box went over a per-rollout bound of the shared eval
  process (`arena_kit.verifiers_seam.bounds`: request bodies, requests in flight, connections through its
  egress proxy) or held more of the host's file table than its share (`arena_kit.runtimes.file_watch`): the
  host counted it, stopped the rollout, and recorded the box (`mark_over_bound`), so a harness failure that
  follows (the watch kills the box's processes) is this fault too, whichever way it surfaces.

The evidence is the engine's, the kernel's and the host's word only (`BoxEvidence`): whether the box
runs, `State.OOMKilled`, the cgroup's OOM kill count (read on the host, never through the box), the
runner's exit code as the engine reported it, the host's trace. Nothing printed in the box picks a type. A box that
stopped without `OOMKilled` stays the host's fault (`BoxLostError`, retried); a harness that failed
any other way stays a `HarnessError`.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from verifiers.v1.errors import SandboxError, stop_condition

from arena_kit.errors import AgentKilledBoxError, BoxOomError, BoxOverBoundError

__all__ = [
    "AGENT_FAULTS",
    "AGENT_FAULT_STOPS",
    "KILL_SIGNALS",
    "BoxEvidence",
    "agent_fault",
    "box_cgroups",
    "host_oom_kills",
    "killed_by",
    "mark_over_bound",
    "over_bound",
]


AGENT_FAULTS: tuple[type[SandboxError], ...] = (BoxOomError, AgentKilledBoxError, BoxOverBoundError)
AGENT_FAULT_STOPS = frozenset(stop_condition(fault("")) for fault in AGENT_FAULTS)
"""The stop conditions verifiers writes for them (`boxoom_error`, `agentkilledbox_error`)."""
KILL_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGKILL, signal.SIGTERM})
"""Signals another process sends to stop one; a crash (SIGSEGV, SIGABRT, SIGBUS...) stays the harness's."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC = Path("/proc")
BOX_ID = 12
"""Characters of a container id a box is known by here (verifiers' `RuntimeInfo.id`)."""
_OVER_BOUND: dict[str, str] = {}
"""Box id (`BOX_ID` characters) → why the host stopped it over a bound, for this process's life."""


def mark_over_bound(box: str, reason: str) -> None:
    """Record that the host stopped box `box` (its container id) over a bound, for `reason`; the first reason stays."""
    if box:
        _OVER_BOUND.setdefault(box[:BOX_ID], reason)


def over_bound(box: str) -> str | None:
    """Why the host stopped box `box` (its container id) over a bound; None: it did not."""
    return _OVER_BOUND.get(box[:BOX_ID]) if box else None


@dataclass(frozen=True)
class BoxEvidence:
    """What the engine and the kernel say of a box just after its harness failed."""

    running: bool
    """The engine reports the box running."""
    oom_killed: bool = False
    """The engine's `State.OOMKilled` (on Docker 20.10 set only once the box has stopped)."""
    oom_kills: int | None = None
    """OOM kills the box's memory cgroup counted (None: not readable from this host)."""
    over_bound: str | None = None
    """Why the host stopped the box over a bound (`mark_over_bound`); None: it did not."""


def killed_by(exit_code: int | None) -> signal.Signals | None:
    """The kill signal an exit code reports (128+N from a shell or `docker exec`, -N from Python), if any."""
    if exit_code is None:
        return None
    number = -exit_code if exit_code < 0 else exit_code - 128 if 128 < exit_code < 160 else 0
    try:
        sent = signal.Signals(number)
    except ValueError:
        return None
    return sent if sent in KILL_SIGNALS else None


def agent_fault(
    evidence: BoxEvidence, exit_code: int | None, detail: str, tool_pending: bool = False
) -> SandboxError | None:
    """The agent's fault a harness failure is, on `evidence`, the runner's `exit_code` (None: unknown,
    a live process) and, only when the code is unknown, whether the agent's tool call was still
    running (`tool_pending`); None: not the agent's by this evidence (the failure keeps its own type).
    A box the host stopped over a bound is that fault first: the host's stop is what failed the harness."""
    if evidence.over_bound is not None:
        return BoxOverBoundError(f"the host stopped the box: {evidence.over_bound}: {detail}")
    if not evidence.running:
        # A stopped box is the host's (a daemon restart, a removal) unless the engine says OOM.
        return (
            BoxOomError(f"the engine reports the box killed for running out of memory: {detail}")
            if evidence.oom_killed
            else None
        )
    if evidence.oom_killed or evidence.oom_kills:
        return BoxOomError(
            f"the box ran out of memory ({evidence.oom_kills or 'an'} OOM kill(s) in its memory cgroup) "
            f"and its harness died (exit {exit_code}): {detail}"
        )
    sent = killed_by(exit_code)
    if sent is not None:
        return AgentKilledBoxError(
            f"the harness's runner was killed by {sent.name} (exit {exit_code}) in a box the "
            f"engine reports running, with no OOM kill: a process in the box sent it: {detail}"
        )
    if exit_code is None and tool_pending:
        return AgentKilledBoxError(
            "the harness died while the agent's tool call ran, in a box the engine reports "
            f"running, with no OOM kill: {detail}"
        )
    return None


def box_cgroups(pid: int, container_id: str) -> list[tuple[str, str]]:
    """(controllers, path) of each cgroup of host PID `pid` whose path names `container_id`: none when
    this host cannot see the box so (a remote engine's PID, another PID namespace, a process gone)."""
    try:
        lines = (PROC / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return []
    named = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if container_id and container_id in path:
            named.append((controllers, path))
    return named


def host_oom_kills(pid: int, container_id: str) -> int | None:
    """The OOM kill count of the memory cgroup of the box whose init is host PID `pid`, read on this
    host (cgroup v1 `memory.oom_control`, v2 `memory.events`); None when this host cannot see it (a
    remote engine, another PID namespace: the cgroup path must name `container_id`)."""
    for controllers, path in box_cgroups(pid, container_id):
        if "memory" in controllers.split(","):
            files = [CGROUP_ROOT / "memory" / path.lstrip("/") / "memory.oom_control"]
        elif controllers == "":
            files = [CGROUP_ROOT / path.lstrip("/") / "memory.events"]
        else:
            continue
        for file in files:
            try:
                text = file.read_text()
            except OSError:
                continue
            for row in text.splitlines():
                key, _, value = row.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    return int(value)
    return None
