"""The kit's exceptions, in one place, each named after the boundary that failed.

    SandboxError (verifiers)    a failed box; verifiers records the class name as the trace's error
    │                           type and `<name without Error, lowercased>_error` as its stop condition,
    │                           and retry rules (`arena.retries`) match the exact class name
    ├── BoxLostError            the engine reports the box gone or stopped: the host's, retried
    ├── EngineUnreachableError  the engine did not answer: the host's, retried
    ├── StartMissedError        a live process's PID missed its start deadline: the host's, retried
    ├── BoxOomError             the box ran out of memory: the agent's, never retried
    ├── AgentKilledBoxError     a signal from inside a running box killed the runner: the agent's
    └── BoxOverBoundError       the box went over a per-rollout bound of the eval: the agent's
    RuntimeError
    ├── SeamError               verifiers no longer has a private name the seam relies on
    ├── SecretError             the task secret could not be read or created
    ├── SecretMismatch          a task made under another host's task secret is set up or scored here
    └── NoFreeUid               every agent uid of the range is leased or in use on this host
    ValueError
    ├── TooConcurrent           the host's file table cannot give the boxes their floor limits
    └── NotReexportOnly         a package init does more than re-export (it must run as usual)
    Exception
    ├── EngineRefused           the engine answered an exec start with an error status
    └── BundleError             an `arena-bash` program module the flat file cannot hold

The design decision: importing this module imports no verifiers, because the seam and `arena_kit.lazy_init`
raise from it before a tool server defers verifiers' package inits, and an environment package or the
contract imports the kit without verifiers (~4 CPU-s). The `SandboxError` subclasses are therefore made
on the first read of one of their names (module `__getattr__`), once, with verifiers' own `SandboxError`
as their base; whoever reads one raises or catches a box fault and has verifiers loaded anyway.
The in-box programs (`harnesses/arena_bash/program/`, `harnesses/acp_runner/`) keep their own
exceptions: they run in the box on the standard library alone, bundled without the kit.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

__all__ = [
    "AgentKilledBoxError",
    "BoxLostError",
    "BoxOomError",
    "BoxOverBoundError",
    "BundleError",
    "EngineRefused",
    "EngineUnreachableError",
    "NoFreeUid",
    "NotReexportOnly",
    "SeamError",
    "SecretError",
    "SecretMismatch",
    "StartMissedError",
    "TooConcurrent",
]


class SeamError(RuntimeError):
    """A private verifiers name the seam relies on is missing or changed; the message names it and the seam module."""


class SecretError(RuntimeError):
    """The task secret could not be read or created."""


class SecretMismatch(RuntimeError):
    """A task made under one task secret is set up or scored on a host holding another."""


class NoFreeUid(RuntimeError):
    """Every uid of the range is leased or in use on this host."""


class TooConcurrent(ValueError):
    """The host's file table cannot give this many boxes at once their floor limits within the share."""


class NotReexportOnly(ValueError):
    """A package init does more than re-export names, so it must run as usual."""


class EngineRefused(Exception):
    """The engine answered the exec start with an error status; `explanation` is its message."""

    def __init__(self, status: int, explanation: str) -> None:
        super().__init__(f"{status}: {explanation}")
        self.status = status
        self.explanation = explanation


class BundleError(Exception):
    """A program module the flat file cannot hold as written."""


_SANDBOX_FAULTS = {
    "BoxLostError": "The engine reports the box gone (removed) or stopped (killed, its init exited).",
    "EngineUnreachableError": "The engine did not answer: not running, restarting, or its connection dropped mid-call.",
    "StartMissedError": "A live process in the box did not report its PID within the start deadline.",
    "BoxOomError": "The box ran out of memory and its harness (or the whole box) was killed for it: the agent's outcome.",
    "AgentKilledBoxError": "The harness's runner was killed by a signal sent from inside a box the engine reports running.",
    "BoxOverBoundError": (
        "The box went over a per-rollout bound of the shared eval process (a request body, requests in flight,\n"
        "connections: `arena_kit.verifiers_seam.bounds`) or its share of the host's file table\n"
        "(`arena_kit.runtimes.file_watch`); the host refused or stopped it and ended the rollout."
    ),
}
"""Each `SandboxError` subclass by name, with its docstring (made by `__getattr__`)."""
_MADE = threading.Lock()

if TYPE_CHECKING:
    from verifiers.v1.errors import SandboxError

    class BoxLostError(SandboxError): ...  # type: ignore[misc]  # verifiers ships no types

    class EngineUnreachableError(SandboxError): ...  # type: ignore[misc]

    class StartMissedError(SandboxError): ...  # type: ignore[misc]

    class BoxOomError(SandboxError): ...  # type: ignore[misc]

    class AgentKilledBoxError(SandboxError): ...  # type: ignore[misc]

    class BoxOverBoundError(SandboxError): ...  # type: ignore[misc]
else:

    def __getattr__(name: str) -> type:
        """A `SandboxError` subclass of `_SANDBOX_FAULTS`, all of them made (under a lock, so every reader
        gets the same classes) on the first read of any."""
        if name not in _SANDBOX_FAULTS:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        with _MADE:
            if name not in globals():
                from verifiers.v1.errors import SandboxError

                for fault, doc in _SANDBOX_FAULTS.items():
                    globals()[fault] = type(
                        fault, (SandboxError,), {"__doc__": doc, "__module__": __name__, "__qualname__": fault}
                    )
        return globals()[name]
