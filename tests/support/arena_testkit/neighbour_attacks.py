"""In-box attacks on what boxes share, fed to `python3 -` inside a box as its agent (stdlib only).

Run as `python3 - <attack> [args...]`. Each attack first reads the limit it meets from inside (its
answer's `limit`), then takes all it can and holds it until the test touches `STOP` (or `HOLD_S`
passes), releases everything and prints one JSON line: what it got and what refused it. The agent's
environment recorded by the held harness step (`escape_probes.AGENT_RECORD`) is loaded first, so the
body and connection attacks use the box's own interception key and egress proxy.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import select
import socket
import stat
import sys
import threading
import time
import urllib.parse

AGENT_RECORD = "/tmp/arena-agent.json"
STOP = "/tmp/arena-neighbour-stop"
HOLD_S = 240.0
libc = ctypes.CDLL(None, use_errno=True)


def _hold() -> None:
    end = time.time() + HOLD_S
    while time.time() < end and not os.path.exists(STOP):
        time.sleep(0.1)


def _ready(name: str) -> None:
    """Say the attack holds: a file made without a descriptor (an attack may hold every one it may open)."""
    os.mknod(f"/tmp/arena-neighbour-{name}", 0o600 | stat.S_IFREG)


def _errno_name() -> str:
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def _in_children(count: int, work) -> tuple[list[dict], list[int]]:
    """`work()` in up to `count` forked children at once (fewer if a fork is refused), each holding what it
    took until `STOP`: their answers (one line each down one shared pipe) and their PIDs."""
    read, write = os.pipe()
    children = []
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.close(read)
            answer = work()
            os.write(write, (json.dumps(answer) + "\n").encode())
            os.close(write)
            _hold()
            os._exit(0)
        children.append(pid)
    os.close(write)
    data = b""
    while data.count(b"\n") < len(children):
        part = os.read(read, 65536)
        if not part:
            break
        data += part
    os.close(read)
    return [json.loads(line) for line in data.decode().splitlines() if line], children


def files(processes: str) -> dict:
    """`processes` processes each open eventfds until refused, and hold them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def fill() -> dict:
        count = 0
        while True:
            if libc.eventfd(0, 0) < 0:
                return {"files": count, "error": _errno_name()}
            count += 1

    answers, children = _in_children(int(processes), fill)
    _ready("files")
    for pid in children:
        os.waitpid(pid, 0)
    return {
        "limit": [soft, hard],
        "processes": len(answers),
        "files": sum(a.get("files", 0) for a in answers),
        "errors": sorted({a.get("error", "?") for a in answers}),
    }


def inotify() -> dict:
    """Two processes take inotify instances until refused, and hold them: together they meet the per-user limit
    (`fs.inotify.max_user_instances`), whatever each process's `nofile`."""

    def fill() -> dict:
        count, error = 0, "none"
        while count < 100_000:
            if libc.inotify_init() < 0:
                error = _errno_name()
                break
            count += 1
        return {"instances": count, "error": error}

    answers, children = _in_children(2, fill)
    _ready("inotify")
    for pid in children:
        os.waitpid(pid, 0)
    return {
        "limit": os.getuid(),
        "instances": sum(a["instances"] for a in answers),
        "errors": sorted({a["error"] for a in answers}),
    }


def _target() -> tuple[str, int, str, str]:
    """The interception's host, port and path prefix as the box reaches it, and the box's own key."""
    base, key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
    for pid in filter(str.isdigit, os.listdir("/proc")):  # arena-bash passes them in its runner's argv
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for arg in argv:
            base = arg.removeprefix("--base-url=") if arg.startswith("--base-url=") else base
            key = arg.removeprefix("--api-key=") if arg.startswith("--api-key=") else key
    url = urllib.parse.urlsplit(base or "")
    return url.hostname or "127.0.0.1", url.port or 80, url.path.rstrip("/"), key or ""


def _post(length: int, send: int, chunked: bool = False) -> str:
    """One POST of a body declared `length` bytes long (or chunked), of which `send` are sent: the status line."""
    host, port, prefix, key = _target()
    with socket.create_connection((host, port), timeout=60) as sock:
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
        sock.sendall(
            f"POST {prefix}/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\n{framing}\r\n\r\n".encode()
        )
        block = b"0" * (1 << 20)
        sent = 0
        try:
            while sent < send:
                part = block[: min(len(block), send - sent)]
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                sent += len(part)
        except OSError:
            pass
        try:
            return sock.recv(200).split(b"\r\n", 1)[0].decode(errors="replace") or "closed"
        except OSError as error:
            return f"closed: {type(error).__name__}"


def bodies(cap: str) -> dict:
    """A body one byte over `cap` (the egress proxy passes a whole request before its answer); then two
    1 GiB bodies at once, one declared and one chunked, sent as far as the server takes them."""
    first = _post(int(cap) + 1, int(cap) + 1)
    results: list[str] = []
    threads = [threading.Thread(target=lambda c=c: results.append(_post(1 << 30, 1 << 30, c))) for c in (False, True)]
    for thread in threads:
        thread.start()
    _ready("bodies")
    for thread in threads:
        thread.join(120)
    return {"limit": first, "gigabytes": sorted(results)}


def connections(count: str, processes: str) -> dict:
    """`count` connections to the box's egress proxy over `processes` processes, each sending half a
    request head and then a byte a second (a slow client): how many the proxy kept and refused."""
    host, port, _, _ = _target()
    per = int(count) // int(processes)

    def slow() -> dict:
        kept, refused, failed = [], 0, 0
        for _ in range(per):
            try:
                sock = socket.create_connection((host, port), timeout=5)
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
                sock.settimeout(0.05)
                try:
                    if sock.recv(100).startswith(b"HTTP/1.1 429"):
                        refused += 1
                        sock.close()
                        continue
                except (TimeoutError, BlockingIOError):
                    pass
                kept.append(sock)
            except OSError:
                failed += 1
        # A refusal may come late on a loaded host (the proxy runs on vf-eval's busy loop): wait up to 15 s and
        # tell answers apart, not times. A 429 (or a reset: the proxy closed on the unread head) is a refusal;
        # a 502 or a bare close is a connection the proxy held until its 10 s header timeout: kept all the same.
        held = 0
        end = time.time() + 15
        while kept and time.time() < end:
            readable, _, _ = select.select(kept, [], [], 0.2)
            for sock in readable:
                try:
                    reply = sock.recv(100)
                except OSError:
                    reply = b"HTTP/1.1 429 (reset)"
                sock.close()
                kept.remove(sock)
                if reply.startswith(b"HTTP/1.1 429"):
                    refused += 1
                else:
                    held += 1
        answer = {"kept": len(kept) + held, "refused": refused, "failed": failed}
        end = time.time() + HOLD_S
        while time.time() < end and not os.path.exists(STOP) and kept:
            for sock in list(kept):
                try:
                    sock.sendall(b"X")
                except OSError:
                    kept.remove(sock)
            time.sleep(1)
        return answer

    answers, children = _in_children(int(processes), slow)
    _ready("connections")
    for pid in children:
        os.waitpid(pid, 0)
    return {"limit": None, **{k: sum(a.get(k, 0) for a in answers) for k in ("kept", "refused", "failed")}}


def spin(processes: str) -> dict:
    """`processes` busy loops until `STOP`."""
    children = []
    for _ in range(int(processes)):
        pid = os.fork()
        if pid == 0:
            end = time.time() + HOLD_S
            while time.time() < end and not os.path.exists(STOP):
                for _ in range(100_000):
                    pass
            os._exit(0)
        children.append(pid)
    _ready("spin")
    for pid in children:
        os.waitpid(pid, 0)
    return {"limit": None, "spun": len(children)}


def fork() -> dict:
    """Fork until a fork is refused, and hold at the limit."""
    children, error = [], "none"
    while len(children) < 100_000:
        try:
            pid = os.fork()
        except OSError as exc:
            error = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            break
        if pid == 0:
            _hold()
            os._exit(0)
        children.append(pid)
    _ready("fork")
    for pid in children:
        os.waitpid(pid, 0)
    return {"limit": None, "processes": len(children) + 1, "error": error}


def memory(megabytes: str) -> dict:
    """Touch `megabytes` of memory in a child (the box's OOM killer takes it), then report how it ended."""
    pid = os.fork()
    if pid == 0:
        held = []
        while len(held) < int(megabytes):
            held.append(b"x" * (1 << 20))
        _hold()
        os._exit(0)
    _ready("memory")
    _, status = os.waitpid(pid, 0)
    return {"limit": None, "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}


def tmpfs(directory: str) -> dict:
    """Fill `directory` until the file system refuses, hold, then free it."""
    path = os.path.join(directory, f"arena-neighbour-fill-{os.getpid()}")
    written, error = 0, "none"
    try:
        with open(path, "wb", buffering=0) as handle:
            while written < (64 << 30):
                written += handle.write(b"\0" * (1 << 20))
    except OSError as exc:
        error = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    _ready("tmpfs")
    _hold()
    if os.path.exists(path):
        os.unlink(path)
    return {"limit": None, "written": written, "error": error}


def mappings(share: str, processes: str) -> dict:
    """`processes` processes map, between them, twice the box's `share` of files no descriptor holds (a file of
    /dev/shm opened, mapped and closed; a shared anonymous mapping), and hold them: `nofile` cannot stop them,
    only the host's watch. The first line says it started; a last line comes only if it outlived the watch."""
    print(
        json.dumps({"limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0], "share": int(share), "started": True}),
        flush=True,
    )
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    failed = ctypes.c_void_p(-1).value
    each = -(-2 * int(share) // int(processes))

    def fill() -> dict:
        for i in range(each):
            if i % 2:
                fd = os.open(f"/dev/shm/arena-mapped-{i % 8}", os.O_RDWR | os.O_CREAT, 0o600)
                os.ftruncate(fd, 4096)
                address = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
                os.close(fd)  # the mapping alone keeps the file open
            else:
                address = libc.mmap(None, 4096, 1, 0x21, -1, 0)  # MAP_SHARED | MAP_ANONYMOUS: a shmem file of its own
            if address in (None, failed):
                return {"mapped": i, "error": _errno_name()}
        return {"mapped": each, "error": "none"}

    _ready("mappings")
    answers, children = _in_children(int(processes), fill)
    for pid in children:
        os.waitpid(pid, 0)
    return {
        "limit": None,
        "survived": True,
        "mapped": sum(a.get("mapped", 0) for a in answers),
        "errors": sorted({a.get("error", "?") for a in answers}),
    }


def main() -> None:
    try:
        record = json.load(open(AGENT_RECORD))
        os.environ.clear()
        os.environ.update(record["env"])
    except (OSError, ValueError, KeyError):
        pass
    print(json.dumps(globals()[sys.argv[1]](*sys.argv[2:])), flush=True)


if __name__ == "__main__":
    main()
