"""Helpers for tests that run real verifiers rollouts on the docker runtime."""

from __future__ import annotations

import contextlib
import fcntl
import http.server
import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from arena.evalrun import EvalOutcome, EvalRequest, run_eval
from arena_testkit import SUPPORT

EGRESS_CUT_COMMENT = "arena-test-egress-cut"
_CUT_RULE = [
    "DOCKER-USER",
    "-i",
    "docker0",
    "!",
    "-o",
    "docker0",
    "-m",
    "comment",
    "--comment",
    EGRESS_CUT_COMMENT,
    "-j",
    "DROP",
]


def smoke_eval(base_url: str, harness: str, model: str, image: str, output_dir: Path, **kwargs) -> EvalOutcome:
    """Run the one-task `arena-smoke` taskset (tests/support/arena_smoke) with one harness, under a
    run name of its own: the eval's leftover sweep removes every box of its run name created since it
    started, so two tests' evals under one name (on two workers) could remove each other's live boxes."""
    request = EvalRequest(
        taskset="arena-smoke",
        harness=harness,
        model=model,
        image=image,
        base_url=base_url,  # type: ignore[arg-type]
        run_name=f"smoke-{harness}-{model.rsplit('/', 1)[-1]}-{uuid.uuid4().hex[:8]}",
        output_dir=output_dir,
        max_concurrent=1,
        env={"PYTHONPATH": str(SUPPORT)},
        **kwargs,
    )
    return run_eval(request, progress=lambda _line: None)


def tool_results(run_dir: Path, runtime_id: str | None = None) -> list[str]:
    """Every tool-result text recorded in a run's traces (what the model saw); with `runtime_id`,
    only those of the episode that ran in that box."""
    texts: list[str] = []
    for line in (run_dir / "traces.jsonl").read_text().splitlines():
        for trace in json.loads(line).get("traces") or []:
            if runtime_id is not None and trace.get("agent", {}).get("runtime", {}).get("id") != runtime_id:
                continue
            for node in trace.get("nodes") or []:
                message = node.get("message") or node
                if message.get("role") == "tool":
                    content = message.get("content")
                    texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


@contextlib.contextmanager
def _held(lock: Path, mode: int) -> Iterator[None]:
    """`flock` on `lock` in `mode` (LOCK_SH or LOCK_EX) across processes, e.g. xdist workers."""
    with lock.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def container_egress_cut(lock: Path) -> Iterator[None]:
    """Drop every container's forwarded traffic (DNS included) while the block runs.

    The rule is host-wide, so it is held under a shared hold on `lock` (the `egress_lock` fixture):
    a test that needs the way out (`outside_reach`) waits until no cut is in force. Rules are
    inserted once per user and deleted once per user, so overlapping users (parallel test workers)
    keep the cut in place until the last one leaves. The interception and MCP callbacks of
    verifiers' docker runtime do not use forwarded traffic, so rollouts still work.
    """
    with _held(lock, fcntl.LOCK_SH):
        subprocess.run(["iptables", "-I", *_CUT_RULE], check=True, capture_output=True)
        try:
            yield
        finally:
            subprocess.run(["iptables", "-D", *_CUT_RULE], check=True, capture_output=True)


@contextlib.contextmanager
def outside_reach(lock: Path) -> Iterator[None]:
    """Held while a test needs containers' traffic to leave the bridge: no `container_egress_cut`
    (on any worker) is in force meanwhile, and none starts."""
    with _held(lock, fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def http_listener(address: str) -> Iterator[int]:
    """A plain HTTP server answering 200 "ok" to any GET, bound to `address` only (e.g. the docker
    bridge gateway: what a box could reach on the host); yields its port."""

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def docker_gateway() -> str:
    """The host's address on the default bridge (what a container sees as its gateway)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True, check=True)
    address = out.stdout.split("inet ", 1)[1].split("/", 1)[0] if "inet " in out.stdout else ""
    if not address:
        raise RuntimeError(f"docker0 has no IPv4 address: {out.stdout!r}")
    return address
