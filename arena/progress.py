"""Per-episode progress of running evals (`arena demo`, `arena probe`): each eval's episodes done of
its total, the mean so far (over tasks, infrastructure failures left out, as every table reports it),
failures, and an ETA, read from each run's `traces.jsonl` as vf-eval appends to it.

On a terminal, rich's live progress bars (one per running eval, one overall); anywhere else (a log,
a pipe, CI) one plain line per finished episode, so a long policy is never silent."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from arena.errors import TraceError
from arena.evalrun import EvalOutcome, EvalRequest, OnDone
from arena.supervise import Supervised
from arena.traces import TRACES_FILE, Episode, TraceFollower, task_rewards

__all__ = ["EvalProgress", "mean_so_far"]


def mean_so_far(episodes: Sequence[Episode]) -> float | None:
    """The mean over tasks of each task's mean score (infrastructure failures left out)."""
    means = [math.fsum(v) / len(v) for v in task_rewards(episodes).values()]
    return math.fsum(means) / len(means) if means else None


@dataclass
class _Eval:
    request: EvalRequest
    total: int | None
    follower: TraceFollower
    episodes: list[Episode] = field(default_factory=list)
    task: TaskID | None = None
    size: int = -1

    @property
    def label(self) -> str:
        return f"{self.request.taskset} {self.request.model.rsplit('/', 1)[-1]}"

    def status(self) -> str:
        mean = mean_so_far(self.episodes)
        failed = sum(e.failed for e in self.episodes)
        return f"mean {'—' if mean is None else f'{mean:.3f}'}" + (f", {failed} failed" if failed else "")


class EvalProgress:
    """Follows the evals of `requests` as `arena.evalrun.run_evals` runs them: pass `started` as
    its `on_start`, `tick` as its `on_tick`, and `wrap(on_done)` as its `on_done`."""

    def __init__(self, requests: Sequence[EvalRequest], out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.evals = {r.run_name: _Eval(r, r.num_tasks, TraceFollower(r.run_dir / TRACES_FILE)) for r in requests}
        self.total = sum(e.total or 0 for e in self.evals.values())
        self.started_at = time.monotonic()
        self.done = 0
        self.live = self.out.isatty()
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=self.out),
            transient=False,
            disable=not self.live,
        )
        self.overall = self.progress.add_task("all episodes", total=self.total or None, status="")

    def __enter__(self) -> EvalProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.stop()

    def started(self, request: EvalRequest, _proc: Supervised) -> None:
        follow = self.evals[request.run_name]
        follow.task = self.progress.add_task(follow.label, total=follow.total, status="starting")

    def tick(self) -> None:
        for follow in self.evals.values():
            if follow.task is not None:
                self._read(follow)

    def wrap(self, on_done: OnDone) -> OnDone:
        """`on_done` after this eval's last episodes are counted and its bar is closed."""

        def done(request: EvalRequest, outcome: EvalOutcome) -> None:
            follow = self.evals[request.run_name]
            self._read(follow)
            if follow.task is not None:
                self.progress.update(follow.task, status=follow.status() + " · done", visible=False)
            on_done(request, outcome)

        return done

    def _read(self, follow: _Eval) -> None:
        try:
            size = follow.follower.path.stat().st_size
        except OSError:
            return
        if size == follow.size:
            return
        follow.size = size
        try:
            lines = follow.follower.read()
        except TraceError:  # vf-eval --clean restarted the file, or a line is garbled: start over
            follow.follower = TraceFollower(follow.follower.path)
            self.done -= len(follow.episodes)
            follow.episodes = []
            return
        for line in lines:
            follow.episodes.append(line.episode)
            self.done += 1
            self._announce(follow, line.episode)
        if lines and follow.task is not None:
            self.progress.update(follow.task, completed=len(follow.episodes), status=follow.status())
            self.progress.update(self.overall, completed=self.done, status=self._eta())

    def _eta(self) -> str:
        if not self.total or not self.done:
            return ""
        left = (time.monotonic() - self.started_at) / self.done * max(self.total - self.done, 0)
        return f"about {left:.0f} s left" if left < 120 else f"about {left / 60:.0f} min left"

    def _announce(self, follow: _Eval, episode: Episode) -> None:
        if self.live:
            return
        score = "infrastructure failure (left out)" if episode.score is None else f"scored {episode.score:.3f}"
        total = f"/{follow.total}" if follow.total else ""
        overall = f"{self.done}/{self.total}" if self.total else str(self.done)
        eta = self._eta()
        failed = f" (failed: {episode.stop_condition or 'not ok'})" if episode.failed else ""
        print(
            f"  {follow.label}: episode {len(follow.episodes)}{total} ({episode.task}) {score}{failed}; "
            f"{follow.status()} · all {overall}" + (f", {eta}" if eta else ""),
            file=self.out,
            flush=True,
        )
