"""In-box escape probes: fed to `python3 -` inside a box as the agent user, each runs one attempt and prints one JSON line.

Run as `python3 - <probe> [args...]` with this file on stdin (stdlib only: the box's own Python). The
probes never damage a box that lets them through: a write probe opens files without writing or puts
back the value it read, a signal is one PID 1 ignores inside its PID namespace, a ptrace that attaches
detaches at once. What succeeded is reported, and the test decides. The agent's environment, recorded by
the held harness step (`AGENT_RECORD`), is loaded first, so every probe runs with the agent's own
`HOME`, `PATH` and proxy settings.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import json
import os
import platform
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request

AGENT_RECORD = "/tmp/arena-agent.json"
"""What the held harness step records: its environment, its uid and its ancestors (pid, uid, argv)."""
SYSCALLS = {  # finit_module, init_module, delete_module, unshare
    "x86_64": {"finit_module": 313, "init_module": 175, "delete_module": 176},
    "aarch64": {"finit_module": 273, "init_module": 105, "delete_module": 106},
}
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206

libc = ctypes.CDLL(None, use_errno=True)


def _error(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def _call(fn, *args) -> str:
    """A libc call's outcome: "ok" or the errno name."""
    if fn(*args) == 0:
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def _try(action) -> str:
    try:
        action()
    except OSError as exc:
        return _error(exc)
    return "ok"


def facts() -> dict:
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    mounts = []
    for line in open("/proc/self/mountinfo"):
        before, _, after = line.partition(" - ")
        fields, (fstype, _source, super_opts) = before.split(), after.split()[:3]
        mounts.append(
            {
                "point": fields[4].replace("\\040", " "),
                "opts": fields[5].split(","),
                "fstype": fstype,
                "super": super_opts.split(","),
            }
        )

    def read(*paths: str) -> str | None:
        for path in paths:
            try:
                return open(path).read().strip()
            except OSError:
                pass
        return None

    quota = (
        read("/sys/fs/cgroup/cpu.max")
        or f"{read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')} {read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')}"
    )
    special = subprocess.run(
        ["find", "/", "-xdev", "-type", "f", "-perm", "/6000"], capture_output=True, text=True
    ).stdout.split()
    return {
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "gid": os.getgid(),
        "home": os.environ.get("HOME"),
        "cwd": os.getcwd(),
        "cap_eff": int(status["CapEff"], 16),
        "cap_prm": int(status["CapPrm"], 16),
        "cap_bnd": int(status["CapBnd"], 16),
        "no_new_privs": status.get("NoNewPrivs", "").strip(),
        "seccomp": status.get("Seccomp", "").strip(),
        "pid1_uid": os.stat("/proc/1").st_uid,
        "mounts": mounts,
        "setuid_files": special,
        "pids_max": read("/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/pids.max"),
        "memory_max": read("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"),
        "cpu_max": quota,
    }


def owners(*patterns: str) -> dict:
    """path → [uid, mode, is_dir] for every path the patterns match (symbolic links left out: their
    target is what counts, and a pattern names it where it matters)."""
    found: dict = {}
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern)}):
        info = os.lstat(path)
        if not stat.S_ISLNK(info.st_mode):
            found[path] = [info.st_uid, stat.S_IMODE(info.st_mode), stat.S_ISDIR(info.st_mode)]
    return found


def writes(*patterns: str) -> dict:
    """Non-destructive write attempts on every path the patterns match: a file is opened for
    appending (nothing written) and chmod-ed to its own mode; a directory gets a new file (removed
    again). path → {operation: "ok" | errno name}."""
    found: dict = {}
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern)}):
        if os.path.islink(path):
            continue
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if os.path.isdir(path):
            probe = os.path.join(path, f".arena-escape-{os.getpid()}")

            def create() -> None:
                os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                os.unlink(probe)

            found[path] = {"create": _try(create), "chmod": _try(lambda: os.chmod(path, mode))}
        else:
            found[path] = {
                "append": _try(lambda: os.close(os.open(path, os.O_WRONLY | os.O_APPEND))),
                "chmod": _try(lambda: os.chmod(path, mode)),
            }
    return found


def oom_pid1() -> dict:
    before = open("/proc/1/oom_score_adj").read().strip()
    raised = str(min(1000, int(before) + 500))

    def write() -> None:
        with open("/proc/1/oom_score_adj", "w") as handle:
            handle.write(raised)

    outcome = _try(write)
    return {"before": before, "tried": raised, "write": outcome, "after": open("/proc/1/oom_score_adj").read().strip()}


def signal_pid1() -> dict:
    # PID 1 of a PID namespace ignores these from inside it even when permitted: the probe asks for
    # permission, which is what a refusal must withhold.
    return {
        name: _try(lambda s=number: os.kill(1, s))
        for name, number in (
            ("signal-0", 0),
            ("SIGTERM", signal.SIGTERM),
            ("SIGKILL", signal.SIGKILL),
            ("SIGSTOP", signal.SIGSTOP),
        )
    }


def ptrace_pid1() -> dict:
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    out = {}
    for name, request in (("attach", PTRACE_ATTACH), ("seize", PTRACE_SEIZE)):
        result = libc.ptrace(request, 1, None, None)
        out[name] = "ok" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
        if result == 0:
            libc.ptrace(PTRACE_DETACH, 1, None, None)
    out["read-mem"] = _try(lambda: os.close(os.open("/proc/1/mem", os.O_RDONLY)))
    out["read-environ"] = _try(lambda: open("/proc/1/environ", "rb").read())
    return out


def mounts() -> dict:
    target = f"/tmp/arena-mnt-{os.getpid()}"
    os.makedirs(target, exist_ok=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    out = {
        "mount-tmpfs": _call(libc.mount, b"none", target.encode(), b"tmpfs", 0, None),
        "bind-root": _call(libc.mount, b"/", target.encode(), None, 4096, None),  # MS_BIND
        "unshare-user": _call(libc.unshare, CLONE_NEWUSER),
        "unshare-mount": _call(libc.unshare, CLONE_NEWNS),
    }
    for name, argv in (
        ("mount-cli", ["mount", "-t", "tmpfs", "none", target]),
        ("unshare-cli", ["unshare", "-rm", "true"]),
    ):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            out[name] = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        except FileNotFoundError:
            out[name] = "ENOENT"
    out["mounted-after"] = os.path.ismount(target)
    os.rmdir(target)
    return out


def module() -> dict:
    numbers = SYSCALLS[platform.machine()]
    libc.syscall.restype = ctypes.c_long
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        return {
            "finit_module": _call(libc.syscall, numbers["finit_module"], fd, b"", 0),
            "init_module": _call(libc.syscall, numbers["init_module"], b"\0" * 64, ctypes.c_ulong(64), b""),
            "delete_module": _call(libc.syscall, numbers["delete_module"], b"arena_escape_none", 0),
        }
    finally:
        os.close(fd)


def proc_sys() -> dict:
    """Open each file for writing; one that opens gets its own value written back (a no-op).
    /proc/sysrq-trigger is only opened, never written."""
    out: dict = {}
    for path in (
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/vm/overcommit_memory",
        "/proc/sys/kernel/hostname",
        "/proc/sys/net/ipv4/ip_forward",
        "/proc/sys/kernel/panic",
        "/proc/sysrq-trigger",
    ):
        try:
            value = b"" if path.endswith("sysrq-trigger") else open(path, "rb").read()
            fd = os.open(path, os.O_WRONLY)
        except OSError as exc:
            out[path] = _error(exc)
            continue
        try:
            if value:
                os.write(fd, value)
            out[path] = "ok"
        except OSError as exc:
            out[path] = "opened, write " + _error(exc)
        finally:
            os.close(fd)
    return out


def cgroup_tree() -> dict:
    """The same for the box's cgroup limits, plus a new child cgroup and a file beside them."""
    out: dict = {}
    names = (
        "pids.max",
        "memory.limit_in_bytes",
        "memory.max",
        "cpu.cfs_quota_us",
        "cpu.max",
        "cgroup.procs",
        "release_agent",
        "notify_on_release",
        "cgroup.subtree_control",
    )
    for path in sorted(
        {p for name in names for p in glob.glob(f"/sys/fs/cgroup/{name}") + glob.glob(f"/sys/fs/cgroup/*/{name}")}
    ):
        try:
            value = open(path, "rb").read()
            fd = os.open(path, os.O_WRONLY)
        except OSError as exc:
            out[path] = _error(exc)
            continue
        try:
            os.write(fd, value or b"\n")
            out[path] = "ok"
        except OSError as exc:
            out[path] = "opened, write " + _error(exc)
        finally:
            os.close(fd)
    for parent in ["/sys/fs/cgroup", *sorted(glob.glob("/sys/fs/cgroup/*/"))[:12]]:
        child = os.path.join(parent, f"arena-escape-{os.getpid()}")
        out[f"mkdir {child}"] = _try(lambda c=child: (os.mkdir(c), os.rmdir(c)))
    return out


def mknod() -> dict:
    out = {}
    for name, kind, device in (
        ("char-null", stat.S_IFCHR, os.makedev(1, 3)),
        ("char-mem", stat.S_IFCHR, os.makedev(1, 1)),
        ("block-disk", stat.S_IFBLK, os.makedev(8, 0)),
    ):
        for directory in ("/tmp", os.getcwd()):
            path = os.path.join(directory, f"arena-{name}-{os.getpid()}")
            outcome = _try(lambda p=path: os.mknod(p, kind | 0o666, device))
            if outcome == "ok":
                os.unlink(path)
            out[f"{name} in {directory}"] = outcome
    return out


def engine_socket() -> dict:
    """The engine's socket at its known places, and every other unix socket on the box's file systems."""
    known = [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run/containerd/containerd.sock",
        "/var/run/containerd/containerd.sock",
        "/run/podman/podman.sock",
        "/run/user/0/docker.sock",
    ]
    found = subprocess.run(
        ["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune", "-o", "-type", "s", "-print"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    out = {}
    for path in dict.fromkeys(known + found):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(3)
        try:
            client.connect(path)
            client.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            out[path] = "connected: " + client.recv(200).decode(errors="replace").split("\r\n", 1)[0]
        except OSError as exc:
            out[path] = _error(exc) if exc.errno else type(exc).__name__
        finally:
            client.close()
    return out


def network(*targets: str) -> dict:
    """Each `host:port` target: a raw TCP connect, a direct HTTP GET and an HTTP GET through the
    agent's own proxy settings."""
    out = {}
    for target in targets:
        host, port = target.rsplit(":", 1)
        out[f"tcp {target}"] = _try(lambda: socket.create_connection((host, int(port)), timeout=5).close())
        url = f"http://{target}/arena-escape"
        for name, opener in (
            ("direct", urllib.request.build_opener(urllib.request.ProxyHandler({}))),
            ("proxy", urllib.request.build_opener()),
        ):
            try:
                with opener.open(url, timeout=8) as reply:
                    out[f"{name} {url}"] = f"ok {reply.status}"
            except Exception as exc:  # noqa: BLE001 - every failure is reported by its type
                out[f"{name} {url}"] = type(exc).__name__
    return out


def fill(directory: str) -> dict:
    """Write zeros into `directory` until the file system refuses; report why and how much, then free it."""
    path = os.path.join(directory, f"arena-fill-{os.getpid()}")
    block, written, error = b"\0" * (1 << 20), 0, "none"
    try:
        with open(path, "wb", buffering=0) as handle:
            while written < (64 << 30):  # a stop far beyond any bound, should there be none
                written += handle.write(block)
    except OSError as exc:
        error = _error(exc)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return {"error": error, "written": written}


def bomb(seconds: str) -> dict:
    """Every process forks as fast as it can until a fork is refused (or the deadline passes), then they
    all stop, reap their children and exit: the tree grows to the limit however little CPU the box gets,
    and collapses with no zombie left."""
    marker = f"/tmp/arena-bomb-{os.getpid()}"
    end = time.time() + float(seconds)
    root = os.getpid()
    while time.time() < end and not os.path.exists(marker):
        try:
            pid = os.fork()
        except OSError:
            open(marker, "w").close()
            break
        if pid == 0:
            continue
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    if os.getpid() != root:
        os._exit(0)
    hit = os.path.exists(marker)
    if hit:
        os.unlink(marker)
    return {"limit_hit": hit, "seconds": round(float(seconds) - (end - time.time()), 1)}


def spin(processes: str, seconds: str) -> dict:
    """`processes` busy loops for `seconds` each."""
    end = time.time() + float(seconds)
    children = []
    for _ in range(int(processes)):
        pid = os.fork()
        if pid == 0:
            while time.time() < end:
                pass
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return {"spun": len(children)}


def batch(calls: str) -> list:
    """Each call of the JSON list `[[probe, *args], ...]`, in a forked child of its own (a probe the box
    let through cannot change what the next one sees): its answer as {"value": ...} or {"error": ...}."""
    out = []
    for name, *args in json.loads(calls):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                payload = {"value": globals()[name](*args)}
            except BaseException as exc:  # noqa: BLE001 - reported to the test, which fails on it
                payload = {"error": f"{type(exc).__name__}: {exc}"}
            with os.fdopen(write, "w") as handle:
                json.dump(payload, handle)
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as handle:
            data = handle.read()
        os.waitpid(pid, 0)
        out.append(json.loads(data) if data else {"error": f"the probe {name} died"})
    return out


def main() -> None:
    try:
        record = json.load(open(AGENT_RECORD))
        os.environ.clear()
        os.environ.update(record["env"])
    except (OSError, ValueError, KeyError):
        pass
    name, args = sys.argv[1], sys.argv[2:]
    print(json.dumps(globals()[name](*args)), flush=True)


if __name__ == "__main__":
    main()
