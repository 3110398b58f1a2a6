"""Arena's exceptions: a flat set, each named after the boundary that failed.

ArenaError                  every message says what failed, on which input, what to do next
├── PrerequisiteError       the machine lacks something (engine, tool, image): exit 2, no traceback
├── UsageError              a command's arguments cannot be used as given: exit 2
├── ImageBuildError         one image build step failed (step, command, output, fix)
├── DockerError             the engine refused or timed out on a call (`arena.engine`)
├── EvalError               a vf-eval run failed or its episodes did (`arena.evalrun`)
├── TraceError              a run's `traces.jsonl` cannot be read (`arena.traces`)
├── PolicyLoadError         an environment's `arena.environments` entry point is broken
└── UnknownPolicy           no policy under a model name (also a LookupError)
RequestError                the model server cannot serve a request: rendered to the client
                            in its dialect's error shape, never raised past the server
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ArenaError",
    "DockerError",
    "EvalError",
    "ImageBuildError",
    "PolicyLoadError",
    "PrerequisiteError",
    "RequestError",
    "TraceError",
    "UnknownPolicy",
    "UsageError",
]


class ArenaError(Exception):
    """Base class: every message says what failed, on which input, and what to do next."""


class PrerequisiteError(ArenaError):
    """Something the machine must provide is missing (a Docker engine, debootstrap, ...)."""


class UsageError(ArenaError):
    """A command's arguments cannot be used as given (exit 2, like argparse's own errors)."""


class ImageBuildError(ArenaError):
    """One image build step failed."""

    def __init__(self, step: str, command: str, detail: str, hint: str) -> None:
        self.step, self.command, self.detail, self.hint = step, command, detail, hint
        super().__init__(f"image build step '{step}' failed: {command}\n{detail.rstrip()}\nfix: {hint}")


class DockerError(ArenaError):
    """The Docker engine refused a call or did not answer in time."""


class EvalError(ArenaError):
    """A vf-eval run exited badly or some of its episodes failed."""


class TraceError(ArenaError):
    """A run's `traces.jsonl` is missing or corrupt beyond its last line."""


class PolicyLoadError(ArenaError):
    """An environment's `arena.environments` entry point, or the policies its declaration names,
    failed to load or has the wrong shape."""


class UnknownPolicy(ArenaError, LookupError):
    """No policy is registered under the requested model name."""

    def __init__(self, model: str, available: Sequence[str]) -> None:
        listing = ", ".join(available) or "none"
        super().__init__(f"model {model!r} not found; available policies: {listing}")
        self.model = model
        self.available = list(available)


class RequestError(Exception):
    """A request the model server cannot serve; rendered as the dialect's error body with `status`."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
