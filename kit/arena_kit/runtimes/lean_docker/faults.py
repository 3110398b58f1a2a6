"""The lean runtime's infrastructure faults as types, so a retry rule matches them by class and no text can forge one.

Each is a verifiers `SandboxError` (it leaves `LeanEnv.run` and a rollout as itself) raised only where the
*engine* says what happened: a box the engine reports gone or stopped, an engine that does not answer, a
live process whose PID did not arrive in time. Output from inside the box never picks the type; it may
only be quoted in the message, which no retry rule reads (`arena.retries`). verifiers records a
fault's class name as the error's `type` and `<name without Error, lowercased>_error` as the trace's
stop condition (`STOP_CONDITIONS`).
"""

from __future__ import annotations

from verifiers.v1.errors import SandboxError

__all__ = ["STOP_CONDITIONS", "BoxLostError", "EngineUnreachableError", "StartMissedError"]


class BoxLostError(SandboxError):  # type: ignore[misc]  # verifiers ships no types
    """The engine reports the box gone (removed) or stopped (killed, its init exited)."""


class EngineUnreachableError(SandboxError):  # type: ignore[misc]  # verifiers ships no types
    """The engine did not answer: not running, restarting, or its connection dropped mid-call."""


class StartMissedError(SandboxError):  # type: ignore[misc]  # verifiers ships no types
    """A live process in the box did not report its PID within the start deadline."""


STOP_CONDITIONS = {
    "boxlost_error": BoxLostError,
    "engineunreachable_error": EngineUnreachableError,
    "startmissed_error": StartMissedError,
}
"""The stop condition verifiers writes on a trace for each fault (`verifiers.v1.errors.stop_condition`)."""
