"""A uid of its own for each box's agent, leased on this host from a range no host user has.

The design decision: the kernel keeps many limits per user (inotify instances and watches, POSIX message
queue bytes, RLIMIT_NPROC, file descriptors in flight over unix sockets), keyed by the uid in the host's
own user namespace. Every Arena image makes its agent uid 1000, as is a host user here: one box could take
all of uid 1000's inotify instances from every other box and from that host user. A user-namespace remap
(dockerd's `userns-remap`) is daemon-wide and needs a daemon restart, so each box's agent instead gets
a uid of its own, chosen when the box is created from `FIRST_UID` .. `FIRST_UID + UIDS`.

A lease is an exclusive `flock` on `LEASE_DIR/<uid>`, held by the process that owns the box for as long
as the box lives, so two eval processes on this host never hand out one uid at once, and a process that
dies releases its leases with it. A uid is skipped while any process on this host runs as it (a box a
killed eval left behind, until it is reaped) or the host's user database names it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import threading
from dataclasses import dataclass, field
from pathlib import Path

from arena_kit.errors import NoFreeUid

__all__ = ["FIRST_UID", "LEASE_DIR", "UIDS", "UidLease", "lease_uid", "passwd_for", "uids_running"]

FIRST_UID = 1_900_000_000
"""Above every range user databases and user namespaces hand out by convention (system and login users
below 65,536, subordinate ranges from 100,000, systemd-nspawn's up to 0x6FFFFFFF) and below 2^31."""
UIDS = 65_536
LEASE_DIR = Path(os.environ.get("ARENA_UID_LEASES", "/run/arena/agent-uids"))
_lock = threading.Lock()


@dataclass
class UidLease:
    """One box's agent uid (and gid), held until `release`."""

    uid: int
    _fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.release()


def uids_running(first: int = FIRST_UID, count: int = UIDS) -> set[int]:
    """The uids of the range some process on this host runs as (the owner of its `/proc/PID`)."""
    found = set()
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    uid = entry.stat().st_uid
                    if first <= uid < first + count:
                        found.add(uid)
    return found


def _named(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def lease_uid(directory: Path | None = None, first: int = FIRST_UID, count: int = UIDS) -> UidLease:
    """The lowest uid of the range no process of this host leases, runs as or names.

    Raises:
        NoFreeUid: none is free (more boxes at once on this host than the range holds, or leftovers).
        OSError: the lease directory cannot be made (the lean runtime needs root on the docker host).
    """
    directory = LEASE_DIR if directory is None else directory
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    running = uids_running(first, count)
    with _lock:  # flock is per open file: two threads of this process must not race for one uid either
        for uid in range(first, first + count):
            if uid in running:
                continue
            fd = os.open(directory / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if _named(uid):
                os.close(fd)
                continue
            return UidLease(uid, fd)
    raise NoFreeUid(f"all {count} agent uids from {first} are leased or in use on this host")


def passwd_for(passwd: str, group: str, user: str, uid: int) -> tuple[str, str]:
    """The image's `/etc/passwd` and `/etc/group` texts with `user` (and its own group) made `uid`/`uid`.

    Raises:
        ValueError: the image has no such user.
    """
    users, found = [], False
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 7 and fields[0] == user:
            fields[2] = fields[3] = str(uid)
            found = True
        users.append(":".join(fields))
    if not found:
        raise ValueError(f"the image has no user {user!r} in /etc/passwd")
    groups = []
    for line in group.splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[0] == user:
            fields[2] = str(uid)
        groups.append(":".join(fields))
    return "\n".join(users) + "\n", "\n".join(groups) + "\n"
