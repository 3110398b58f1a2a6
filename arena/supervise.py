"""Supervise a child process group: start it in its own session, reap it in one place, stop it whole.

vf-eval starts tool servers and docker CLI children; signalling only its pid would orphan them, so
stopping sends SIGTERM to the whole group (vf-eval then tears its containers down) and SIGKILL
after a grace. The child is reaped only here, with `os.wait4`, so its CPU and that of every child
it reaped come back with the exit code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

__all__ = ["STOP_SIGNALS", "TERMINATE_GRACE_S", "Exit", "Stopped", "Supervised", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a command the way Ctrl-C does (a service manager's stop, a closed terminal)."""


class Stopped(KeyboardInterrupt):
    """A stop signal, raised where Ctrl-C's KeyboardInterrupt is: every path that stops evals and
    reaps their boxes on Ctrl-C runs for it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block (main thread only), SIGTERM and SIGHUP raise `Stopped` as SIGINT raises
    KeyboardInterrupt; the previous handlers come back after it. A second signal while the first
    is being handled is ignored, so the teardown it started runs to its end."""
    stopping = False

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


TERMINATE_GRACE_S = 30.0
"""How long a stopped group may take to tear down before it is killed."""
POLL_S = 0.1


@dataclass(frozen=True)
class Exit:
    returncode: int
    cpu_s: float
    """CPU-seconds of the process and the descendants it reaped."""
    timed_out: bool = False
    """True when the deadline passed and the group was stopped."""


class Supervised:
    """One child in its own process group, output to `log_path`, stdin closed."""

    def __init__(self, argv: Sequence[str], log_path: Path, env: Mapping[str, str]) -> None:
        with open(log_path, "wb") as log:
            self._proc = subprocess.Popen(
                list(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid = self._proc.pid
        self.started = time.monotonic()
        self._exit: Exit | None = None
        self._term_at: float | None = None
        self._timed_out = False

    def poll(self, deadline_s: float | None = None) -> Exit | None:
        """The exit if the child has ended (reaping it), else None. Past `deadline_s` seconds from
        the start, the group gets SIGTERM and, after the grace, SIGKILL; the exit is then marked
        `timed_out`."""
        if self._exit is not None:
            return self._exit
        pid, status, usage = os.wait4(self.pid, os.WNOHANG)
        if pid:
            self._proc.returncode = os.waitstatus_to_exitcode(status)
            self._exit = Exit(self._proc.returncode, usage.ru_utime + usage.ru_stime, self._timed_out)
            return self._exit
        now = time.monotonic()
        if deadline_s is not None and self._term_at is None and now - self.started > deadline_s:
            self._timed_out = True
            self._terminate(now)
        if self._term_at is not None and now - self._term_at > TERMINATE_GRACE_S:
            self._signal(signal.SIGKILL)
        return None

    def wait(self, deadline_s: float | None = None) -> Exit:
        """Block until the child ends (stopping it at the deadline, see `poll`)."""
        while (done := self.poll(deadline_s)) is None:
            time.sleep(POLL_S)
        return done

    def stop(self) -> Exit:
        """SIGTERM the group, SIGKILL it after the grace, and reap the child."""
        if self._exit is None:
            self._terminate(time.monotonic())
        return self.wait()

    def _terminate(self, now: float) -> None:
        self._term_at = now
        self._signal(signal.SIGTERM)

    def _signal(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass
