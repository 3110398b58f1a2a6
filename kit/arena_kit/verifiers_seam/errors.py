"""The one error the seam raises: verifiers no longer has a private name Arena relies on."""

from __future__ import annotations

__all__ = ["SeamError"]


class SeamError(RuntimeError):
    """A private verifiers name the seam relies on is missing or changed; the message names it and the seam module."""
