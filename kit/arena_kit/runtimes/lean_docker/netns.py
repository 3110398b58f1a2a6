"""A TCP listener opened inside a box's network namespace, so a box with no network still reaches its egress proxy."""

from __future__ import annotations

import ctypes
import os
import socket
import threading

from verifiers.v1.errors import SandboxError

__all__ = ["CLONE_NEWNET", "listener_in_netns"]

CLONE_NEWNET = 0x40000000


def listener_in_netns(pid: int) -> socket.socket:
    """A TCP listener on 127.0.0.1 (OS-chosen port) inside the network namespace of process `pid`.

    `setns` moves only the calling thread, so it runs in a thread made for this and discarded.

    Raises:
        SandboxError: the namespace cannot be entered (the host process needs CAP_SYS_ADMIN, i.e.
            root; otherwise use the stock docker runtime).
    """
    found: list[socket.socket] = []
    failed: list[BaseException] = []

    def enter() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        except OSError as error:
            failed.append(error)
            return
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                failed.append(OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno())))
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            listener.setblocking(False)
            found.append(listener)
        except BaseException as error:  # noqa: BLE001 - reported to the caller below
            failed.append(error)
        finally:
            os.close(target)

    thread = threading.Thread(target=enter, name=f"arena-lean-netns-{pid}")
    thread.start()
    thread.join()
    if failed or not found:
        detail = failed[0] if failed else "no listener"
        raise SandboxError(
            f"cannot open the callback listener in the box's network namespace (pid {pid}): {detail}. "
            'The lean runtime needs root on the docker host; select the stock runtime with `[env] docker = "stock"`'
        )
    return found[0]
