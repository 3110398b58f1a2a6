"""What a failed call into a lean box is, by the engine's word on the box: in the running box, the box lost, or the agent's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import docker
import docker.errors
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.base import ProgramResult

from arena_kit.box.faults import BoxEvidence, agent_fault, host_oom_kills, over_bound
from arena_kit.errors import BoxLostError, BoxOomError
from arena_kit.runtimes.lean_docker.engine import CONNECTION_LOST, ENGINE_ERRORS, engine_client, engine_fault, off_loop

__all__ = ["BoxWitness"]

_UNANSWERED: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, SandboxError)  # SandboxError: `engine_client`


@dataclass(frozen=True)
class BoxWitness:
    """One box as the engine and this host report it. A failure's type comes from here alone, so no
    box's words (a replaced `cat` printing "No such container") can make it retried."""

    api: docker.APIClient | None
    """The box's engine client (None: `engine_client`'s)."""
    container: str | None
    """The container's name (None: not created)."""
    box_id: str
    """The engine's short id of the box (`info.id`), under which `arena_kit.box.faults.over_bound` records it."""

    async def running(self) -> bool:
        """Whether the engine reports the container running; an engine that cannot answer has lost the box."""
        if not self.container:
            return False
        try:
            api = self.api or (await off_loop(engine_client)).api
            details = await off_loop(api.inspect_container, self.container)
        except _UNANSWERED:
            return False
        return bool(details["State"]["Running"])

    async def evidence(self) -> BoxEvidence:
        """What the engine (running, `State.OOMKilled`) and this host's memory cgroup (OOM kills) say of
        the box; an engine that cannot answer has lost it (`running` False)."""
        if not self.container:
            return BoxEvidence(running=False)
        stopped = over_bound(self.box_id)
        try:
            api = self.api or (await off_loop(engine_client)).api
            details = await off_loop(api.inspect_container, self.container)
        except _UNANSWERED:
            return BoxEvidence(running=False, over_bound=stopped)
        state = details.get("State") or {}
        running = bool(state.get("Running"))
        kills = host_oom_kills(int(state.get("Pid") or 0), str(details.get("Id") or "")) if running else None
        return BoxEvidence(
            running=running, oom_killed=bool(state.get("OOMKilled")), oom_kills=kills, over_bound=stopped
        )

    async def engine_failure(self, operation: str, error: BaseException) -> SandboxError:
        """The fault an Engine API call into the box that failed during `operation` with `error` is."""
        if isinstance(error, CONNECTION_LOST) and await self.running():
            # The engine answers and reports the box running: the stream closed at the box's end
            # (an exec whose process quit before taking all its stdin), no lost engine.
            return SandboxError(
                f"in the running box: {operation}: the exec stream closed ({type(error).__name__}: {error})"
            )
        if isinstance(error, docker.errors.NotFound) and not isinstance(
            fault := engine_fault(operation, error), BoxLostError
        ):
            # An exec instance is removed with its container: the engine's word on the container
            # names the real loss ("No such container"), which a missing exec alone does not.
            try:
                await off_loop(cast(docker.APIClient, self.api).inspect_container, self.container)
            except ENGINE_ERRORS as lost:
                return engine_fault(operation, lost)
            return fault
        return await self._unless_oom(engine_fault(operation, error))

    async def _unless_oom(self, fault: SandboxError) -> SandboxError:
        """`fault`, or `BoxOomError` when it is a lost box the engine reports killed for running out of memory."""
        if isinstance(fault, BoxLostError) and (await self.evidence()).oom_killed:
            return BoxOomError(f"the engine reports the box killed for running out of memory: {fault}")
        return fault

    async def in_box_failure(self, message: str) -> SandboxError:
        """A failed in-box read or write, whose `message` quotes the box's own stderr: marked "in the
        running box: " while the engine reports the box running, `BoxLostError` when it does not. The
        stock runtime gets the marking from `arena.vf_hooks`. A box the engine reports killed for running
        out of memory is the agent's `BoxOomError`, never retried."""
        evidence = await self.evidence()
        if evidence.running:
            return SandboxError(f"in the running box: {message}")
        if evidence.oom_killed:
            return BoxOomError(f"the engine reports the box killed for running out of memory: {message}")
        return BoxLostError(f"the engine reports the box stopped: {message}")

    async def program_result(self, result: ProgramResult) -> ProgramResult:
        """A main program's result, classified by the engine's word when it failed
        (`arena_kit.box.faults`): the agent's `BoxOomError` or `AgentKilledBoxError`, the host's
        `BoxLostError` (verifiers would say "runtime died under harness" in an untyped SandboxError),
        or the failed result itself (verifiers makes it a `HarnessError`).

        Raises:
            BoxOomError: the box ran out of memory (an OOM kill in its cgroup, or the engine's `OOMKilled`).
            AgentKilledBoxError: the program was killed by a signal in a box the engine reports running.
            BoxLostError: the program failed and the engine reports the box stopped or gone, not for memory.
        """
        if result.exit_code == 0:
            return result
        detail = (result.stderr or result.stdout).strip()[-2000:] or "<no output>"
        evidence = await self.evidence()
        fault = agent_fault(evidence, result.exit_code, detail)
        if fault is not None:
            raise fault
        if not evidence.running:
            raise BoxLostError(f"the box stopped under its main program (exit {result.exit_code}): {detail}")
        return result
