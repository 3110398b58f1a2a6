"""Counts the execs a lean box makes: the argv of each exec through the Engine API while a block runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import arena_kit.runtimes.lean_docker.runtime as lean

__all__ = ["counting_execs"]


@contextlib.contextmanager
def counting_execs() -> Iterator[list[list[str]]]:
    """The argv of every exec the lean runtime makes while the block runs."""
    execs: list[list[str]] = []
    exec_sync = lean.exec_sync

    def counted(api: Any, container: str, argv: list[str], *rest: Any) -> tuple[int, bytes, bytes]:
        execs.append(argv)
        return exec_sync(api, container, argv, *rest)

    lean.exec_sync = counted
    try:
        yield execs
    finally:
        lean.exec_sync = exec_sync
