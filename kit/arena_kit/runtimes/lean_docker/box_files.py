"""A running box's regular files read from this host through its init's root (`/proc/PID/root`), without an exec.

The design decision: a grader's read of a box's file was an exec (`cat`), which costs the engine a
`runc exec` (~0.06 CPU-s with its in-box half on a quiet 2-core machine). The host can read the same
file through the root of the box's init process, as the kernel shows it: the box's own mount
namespace, its tmpfs mounts included. Four things keep that read inside the box:
- the path is resolved by `openat2` with `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS` from the box's
  root, so `..`, absolute symlinks and `/proc/*/root`-style links the agent planted resolve inside
  the box or fail, never on the host;
- the init is pinned by a pidfd taken at boot, and a read proceeds only while that very process
  lives (a PID reused after the box stopped names some other process's root), and only for a PID
  whose cgroup names the box's container id (a remote engine's PID means nothing here);
- only a regular file on the box's own storage (tmpfs, the image's overlay) is opened for reading: a
  FIFO, a device or a socket is never opened, and neither is a file of procfs or sysfs, whose content
  the kernel computes from the reader (the host's hostname, its kernel log, which a read drains);
- the read is bounded by the file's size as stat gives it, and by `MOST_BYTES`: a sparse file of a
  terabyte cannot fill the host's memory in a thread no cancellation reaches.
Anything else, and any failure, returns None: the caller reads with its exec as before, so errors
and odd files behave exactly as they did.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import stat
import threading

from arena_kit.box.faults import box_cgroups

__all__ = ["BoxRoot"]

SYS_OPENAT2 = 437
"""`openat2`'s syscall number (the generic table: x86-64 and arm64 alike; Linux ≥ 5.6)."""
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
CHUNK = 1 << 20
MOST_BYTES = 64 << 20
"""The largest read made from the host; a bigger one is the exec's (cancellable, streamed by the engine)."""
BOX_STORAGE = frozenset({0x01021994, 0x794C7630})
"""The filesystems a box's own files live on (`statfs` magic of tmpfs and overlayfs); a file on any
other is the exec's to read."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _filesystem(fd: int) -> int:
    """The `statfs` magic of the filesystem `fd` is on (`f_type`, the struct's first word).

    Raises:
        OSError: the kernel's answer.
    """
    buffer = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if _libc.fstatfs(fd, buffer) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


def _open_in_root(root: int, path: bytes) -> int:
    """An `O_PATH` fd of `path` resolved inside the directory `root` as if it were `/`.

    Raises:
        OSError: the kernel's answer (ENOSYS: no `openat2`; EXDEV/ELOOP: a magic link on the way).
    """
    how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
    fd = int(_libc.syscall(SYS_OPENAT2, root, path, ctypes.byref(how), ctypes.sizeof(how)))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return fd


class BoxRoot:
    """The root of one running box, as this host sees it through the box's pinned init."""

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self._pidfd: int | None = pidfd
        self._lock = threading.Lock()
        """Held while a read opens the root and checks the pidfd, and by `close`: reads run in threads."""

    @classmethod
    def pin(cls, pid: int, container_id: str) -> BoxRoot | None:
        """The root of the box whose init is host PID `pid`, or None when this host cannot read it so:
        the PID's cgroup does not name `container_id` (a remote engine, another PID namespace), the
        process is gone, or this host lacks `pidfd_open`."""
        try:
            pidfd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            return None
        box = cls(pid, pidfd)
        if not box_cgroups(pid, container_id) or not box._alive():
            box.close()
            return None
        return box

    def read(self, path: str, max_bytes: int | None = None) -> bytes | None:
        """At most `max_bytes` bytes (all if None) of the regular file at absolute box path `path`;
        None when it is not one this host can read so (missing, not regular, the box gone, no
        `openat2`): the caller's exec answers instead."""
        if "\0" in path:
            return None
        try:
            encoded = os.fsencode(path)
        except UnicodeError:
            return None
        with self._lock:
            if self._pidfd is None:
                return None
            try:
                root = os.open(f"/proc/{self.pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                return None
            try:
                if not self._alive():  # after the open: the root opened is the pinned process's
                    return None
                try:
                    found = _open_in_root(root, encoded)
                except OSError:
                    return None
            finally:
                os.close(root)
        try:
            found_stat = os.fstat(found)
            if not stat.S_ISREG(found_stat.st_mode) or _filesystem(found) not in BOX_STORAGE:
                return None
            bound = found_stat.st_size + 1 if max_bytes is None else min(max_bytes, found_stat.st_size + 1)
            if bound > MOST_BYTES:
                return None
            fd = os.open(f"/proc/self/fd/{found}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return None
        finally:
            os.close(found)
        try:
            data = _read_up_to(fd, bound)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) > found_stat.st_size:  # it grew while read: the exec reads it as it is now
            return None
        return data

    def close(self) -> None:
        with self._lock:
            pidfd, self._pidfd = self._pidfd, None
        if pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(pidfd)

    def _alive(self) -> bool:
        if self._pidfd is None:
            return False
        try:
            signal.pidfd_send_signal(self._pidfd, 0)
        except ProcessLookupError:
            return False
        except OSError as error:
            return error.errno == errno.EPERM
        return True


def _read_up_to(fd: int, most: int) -> bytes:
    parts: list[bytes] = []
    left = most
    while left > 0:
        part = os.read(fd, min(CHUNK, left))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
