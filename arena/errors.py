"""Arena's exceptions: a flat set, each named after the boundary that failed.

A `PrerequisiteError` (no engine, missing tool) is printed without a traceback and exits 2; an
`ImageBuildError` names the build step, the command that failed and what to do about it.
"""

from __future__ import annotations

__all__ = ["ArenaError", "ImageBuildError", "PrerequisiteError", "UsageError"]


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
