"""What the bench's docker tests share: the daemons' cgroup, held by one test at a time across xdist workers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from filelock import FileLock


@pytest.fixture
def daemons_cgroup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Held while a test moves dockerd into the bench's cgroup (`runtime_bench.docker_side`): two at
    once would each see the other's enlisting and releasing."""
    with FileLock(str(tmp_path_factory.getbasetemp().parent / "arena-docker-side.lock")):
        yield
