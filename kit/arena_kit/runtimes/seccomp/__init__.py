"""The seccomp profile of every Arena box: Docker's default, minus the system calls an agent never needs.

The design decision: a box's system calls are filtered by the profile its engine applies at create time;
Docker's default (Moby 20.10.24, `docker-default.json` here, Apache-2.0, as Debian's docker.io source
ships it in `golang-github-docker-docker-dev`) is kept whole, with its capability-conditional rules, and
`DENIED` is taken out of its allow rules and answered with the errno given. A program that probes for one
of them (libuv, tokio) sees a kernel without it and falls back.

- `io_uring_setup`, `io_uring_enter`, `io_uring_register` (ENOSYS): the operations an io_uring submits run
  in the kernel without passing this filter again, so a box could open files, sockets and connections the
  filter never saw; and io_uring has been the kernel's largest source of privilege escalations.
- `modify_ldt` (ENOSYS): a 16-bit segment table for Wine and DOS emulators; a recurring exploit primitive.

Reviewed and kept: `ptrace` and `process_vm_readv` (an agent may debug its own programs; the box's PID 1
and every harness process are root's, out of the agent's reach), `memfd_create` and `mincore` (runtimes
use them), `clone3` (the default already answers ENOSYS without CAP_SYS_ADMIN), `userfaultfd`, `keyctl`,
`bpf`, `perf_event_open`, namespaces and mounts (the default already refuses them without the capability).
To refresh the base after an engine upgrade: `apt-get download golang-github-docker-docker-dev`, then
`dpkg-deb -x` it and copy `.../profiles/seccomp/default.json` here.
"""

from __future__ import annotations

import copy
import errno
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["BASE", "DENIED", "profile", "profile_json", "profile_path"]

BASE = Path(__file__).with_name("docker-default.json")
DENIED: dict[str, int] = {
    "io_uring_setup": errno.ENOSYS,
    "io_uring_enter": errno.ENOSYS,
    "io_uring_register": errno.ENOSYS,
    "modify_ldt": errno.ENOSYS,
}
"""System call → the errno a box gets for it."""


@functools.cache
def profile() -> dict[str, Any]:
    """Docker's default profile with `DENIED` taken out of every allow rule and refused with its errno."""
    base: dict[str, Any] = json.loads(BASE.read_text())
    result = copy.deepcopy(base)
    rules = []
    for rule in result["syscalls"]:
        if rule["action"] == "SCMP_ACT_ALLOW":
            rule["names"] = [name for name in rule["names"] if name not in DENIED]
            if not rule["names"]:
                continue
        rules.append(rule)
    for code in sorted(set(DENIED.values())):
        names = sorted(name for name, errno_ret in DENIED.items() if errno_ret == code)
        rules.append(
            {
                "names": names,
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": code,
                "args": [],
                "comment": "Arena: refused in every box (arena_kit.runtimes.seccomp)",
                "includes": {},
                "excludes": {},
            }
        )
    result["syscalls"] = rules
    return result


@functools.cache
def profile_json() -> str:
    """`profile()` as the engine API takes it (`SecurityOpt` "seccomp=<json>")."""
    return json.dumps(profile(), separators=(",", ":"), sort_keys=True)


@functools.cache
def profile_path() -> str:
    """A file holding `profile_json()`, for the docker CLI's `--security-opt seccomp=<path>` (the stock path):
    written once per content under the temporary directory, read-only."""
    text = profile_json()
    path = Path(tempfile.gettempdir()) / f"arena-seccomp-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.is_file() or path.read_text() != text:
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(text)
        partial.chmod(0o444)
        os.replace(partial, path)
    return str(path)
