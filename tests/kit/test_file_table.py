"""Per-box open-file and PIDs limits sum to at most `SHARE` of the host's file table at any concurrency the
host can hold (`arena_kit.runtimes.file_table`); the engine's default (20,000 files a process, 512
processes) took a single box past the whole table."""

from __future__ import annotations

import pytest

from arena_kit.errors import TooConcurrent
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.file_table import (
    HEADROOM,
    NOFILE_FLOOR,
    PIDS_FLOOR,
    SHARE,
    box_files,
    host_file_max,
)

FILE_MAX = 2_466_246
"""This machine's `fs.file-max` when measured."""


def test_the_engine_default_let_one_box_take_the_whole_file_table():
    assert 20_000 * 512 > FILE_MAX  # what issue 40 crossed: every box allowed 10 M files


@pytest.mark.parametrize("concurrency", [1, 2, 4, 8, 16, 32, 40])
@pytest.mark.parametrize("file_max", [FILE_MAX, 200_000, 50_000_000, None])
def test_every_box_at_once_stays_within_the_share(concurrency, file_max):
    try:
        limits = box_files(ISOLATION.pids, concurrency, file_max)
    except TooConcurrent as refused:
        assert "rollouts at once" in str(refused)
        return
    assert limits.boxes == concurrency + HEADROOM
    assert limits.most_files <= SHARE * limits.file_max
    assert limits.nofile >= NOFILE_FLOOR and PIDS_FLOOR <= limits.pids <= ISOLATION.pids


def test_a_host_too_small_for_the_concurrency_is_refused_with_what_it_allows():
    with pytest.raises(TooConcurrent, match=r"run at most \d+ rollouts at once"):
        box_files(ISOLATION.pids, 200, FILE_MAX)


def test_this_host_s_file_table_is_read():
    assert host_file_max() > 0
