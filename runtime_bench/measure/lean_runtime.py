"""Measure stock vs lean docker rollouts (scripted policy, smoke taskset, any harness) against the `docker run` floor.

Run: `PYTHONPATH=tests/support .venv/bin/python runtime_bench/measure/lean_runtime.py [--rollouts 16] [--levels 1 8] [--harnesses bash claude_code codex]`
(root, docker, the arena images). Per configuration it runs one vf-eval of N rollouts and samples /proc and
the boxes' cgroups every 50 ms. The window is the eval's first container create to its last container
destroy (docker events, label `verifiers.run=<run>`), so vf-eval's start-up is left out for both paths.
CPU-s per rollout by process: vf-eval's own Python (and the shared tool server), docker CLI (children vf-eval
reaped in the window), dockerd and containerd (machine-wide: other work on the host adds to them), our
containers' shims, runc (the runc processes our shims started, counted by process accounting, times the
CPU of one `runc exec` calibrated at the start) and the processes inside the boxes (their cgroup's CPU, or
the processes seen there if more; `runc init` runs in the box's cgroup, so a little of runc counts twice). "docker side" is docker CLI + dockerd + containerd + shims + runc. Short processes are
seen through their reaper, so nothing is sampled away but a shim's last < 50 ms. A checkout script, not shipped in the wheel.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import struct
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docker

from arena.evalrun import API_KEY_VAR, eval_config, read_outcome
from arena.server import start_in_thread
from arena_kit.policy import Answer, CallTool, RunShell
from arena_kit.scripted import ScriptedPolicy
from arena_testkit.lean_evals import smoke_request

TICK = os.sysconf("SC_CLK_TCK")
POLICY = ScriptedPolicy(
    [RunShell("echo arena-smoke-ok > smoke.txt && cat smoke.txt"), CallTool("note", {"text": "n"}), Answer("DONE")]
)
CATEGORIES = ("vf-eval python", "docker CLI", "dockerd", "containerd", "shims", "runc", "in box")
DOCKER_SIDE = ("docker CLI", "dockerd", "containerd", "shims", "runc")
CALIBRATION = {"runc": 0.0}


@contextlib.contextmanager
def accounting(path: Path) -> Iterator[Path]:
    """BSD process accounting into `path` while the block runs: one record per process that exits, so
    runc's short processes (which a 50 ms /proc scan misses) are all counted."""
    libc = ctypes.CDLL(None, use_errno=True)
    path.write_bytes(b"")
    if libc.acct(str(path).encode()) != 0:
        raise OSError(ctypes.get_errno(), f"acct({path}): {os.strerror(ctypes.get_errno())} (needs root)")
    try:
        yield path
    finally:
        libc.acct(None)


def runc_calls(path: Path | None, shims: set[int]) -> int:
    """How many runc processes our shims started, from an `acct_v3` file (64-byte records). Only the count:
    accounting's CPU times are tick samples, which miss almost all of a process this short."""
    if path is None or not path.exists():
        return 0
    data = path.read_bytes()
    count = 0
    for offset in range(0, len(data) - 63, 64):
        (ppid,) = struct.unpack_from("<I", data, offset + 20)
        count += ppid in shims and data[offset + 48 : offset + 64].split(b"\0")[0] == b"runc"
    return count


def runc_exec_cost(image: str, calls: int = 20) -> float:
    """CPU-s of one `runc exec` of `true` into a running container (what a shim runs per exec), from this
    process's reaped children (exact, unlike accounting)."""
    client = docker.from_env()
    container = client.containers.run(
        image,
        ["sleep", "infinity"],
        entrypoint=[],
        detach=True,
        labels={"arena.session": f"measure-runc-{os.getpid()}"},
    )
    try:
        argv = ["runc", "--root", "/run/docker/runtime-runc/moby", "exec", container.id, "true"]
        subprocess.run(argv, check=True, capture_output=True)  # warm the page cache
        before = os.times()
        for _ in range(calls):
            subprocess.run(argv, check=True, capture_output=True)
        after = os.times()
    finally:
        container.remove(force=True)
    return ((after.children_user + after.children_system) - (before.children_user + before.children_system)) / calls


def _cgroup_cpu(container: str) -> float | None:
    """CPU-s so far of every process in the container's cgroup (v1 cgroupfs or v2 systemd layout)."""
    for path, scale, field_name in (
        (f"/sys/fs/cgroup/cpuacct/docker/{container}/cpuacct.usage", 1e9, None),
        (f"/sys/fs/cgroup/system.slice/docker-{container}.scope/cpu.stat", 1e6, "usage_usec"),
        (f"/sys/fs/cgroup/docker/{container}/cpu.stat", 1e6, "usage_usec"),
    ):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        if field_name is None:
            return int(text) / scale
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == field_name:
                return int(value) / scale
    return None


def _stat(pid: int) -> tuple[str, int, float, float] | None:
    try:
        head, _, rest = Path(f"/proc/{pid}/stat").read_text().rpartition(")")
    except OSError:
        return None
    f = rest.split()
    return head.partition("(")[2], int(f[1]), (int(f[11]) + int(f[12])) / TICK, (int(f[13]) + int(f[14])) / TICK


@dataclass
class Sampler:
    """Per-pid CPU at its last sighting, plus window snapshots of the long-lived processes."""

    root: int
    containers: set[str] = field(default_factory=set)
    last: dict[int, tuple[str, int, float, float]] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)
    snapshots: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    cgroups: dict[str, float] = field(default_factory=dict)
    accounting: Path | None = None
    """The process accounting file of the window (`accounting()`): how many runc processes ran."""
    runc_cost: float = field(default_factory=lambda: CALIBRATION["runc"])
    """CPU-s of one runc process (`runc_exec_cost`, calibrated once by `main`)."""
    stop: threading.Event = field(default_factory=threading.Event)

    def _classify(self, pid: int, comm: str) -> str:
        if comm in ("dockerd", "containerd"):
            return comm
        if comm.startswith("containerd-shim"):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            cid = cmdline[cmdline.index(b"-id") + 1].decode() if b"-id" in cmdline else ""
            return "shim" if cid in self.containers else "other"
        cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        if any(cid in cgroup for cid in self.containers):
            return "box"
        return "other"

    def sample(self) -> None:
        long_lived = {"vf-eval own": 0.0, "vf-eval reaped": 0.0, "dockerd": 0.0, "containerd": 0.0}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            stat = _stat(pid)
            if stat is None:
                continue
            comm, ppid, own, reaped = stat
            if pid not in self.kind or self.kind[pid] == "other" and comm.startswith("containerd-shim"):
                try:
                    self.kind[pid] = self._classify(pid, comm)
                except (OSError, ValueError, IndexError):
                    continue
            self.last[pid] = stat
            if pid == self.root:
                long_lived["vf-eval own"] += own
                long_lived["vf-eval reaped"] += reaped
            elif ppid == self.root and comm != "docker":
                long_lived["vf-eval own"] += own  # the shared tool server and other Python children
            elif self.kind[pid] in ("dockerd", "containerd"):
                long_lived[self.kind[pid]] += own
        for container in list(self.containers):
            used = _cgroup_cpu(container)
            if used is not None:
                self.cgroups[container] = used
        self.snapshots.append((time.time(), long_lived))

    scan_cpu: float = 0.0

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.thread_time()
            self.sample()
            self.scan_cpu += time.thread_time() - started
            time.sleep(0.05)

    def per_category(self, start: float, end: float) -> dict[str, float]:
        inside = [s for t, s in self.snapshots if start - 0.06 <= t <= end + 0.06] or [self.snapshots[-1]]
        first, last = inside[0], inside[-1]
        box = sum(own + reaped for pid, (_, _, own, reaped) in self.last.items() if self.kind.get(pid) == "box")
        shims = [(own, reaped) for pid, (_, _, own, reaped) in self.last.items() if self.kind.get(pid) == "shim"]
        in_box = max(sum(self.cgroups.values()), box)
        return {
            "vf-eval python": last["vf-eval own"] - first["vf-eval own"],
            "docker CLI": last["vf-eval reaped"] - first["vf-eval reaped"],
            "dockerd": last["dockerd"] - first["dockerd"],
            "containerd": last["containerd"] - first["containerd"],
            "shims": sum(own for own, _ in shims),
            "runc": self.runc_cost
            * runc_calls(self.accounting, {pid for pid in self.last if self.kind.get(pid) == "shim"}),
            "in box": in_box,
        }


def watch_containers(label: str, sampler: Sampler, times: list[float], stop: threading.Event) -> Callable[[], None]:
    client = docker.from_env()
    events = client.events(filters={"label": label, "type": "container"}, decode=True)

    def loop() -> None:
        for event in events:
            if event.get("status") == "create":
                sampler.containers.add(event["id"])
            if event.get("status") in ("create", "destroy"):
                times.append(event["time"] + event.get("timeNano", 0) % 10**9 / 1e9)

    threading.Thread(target=loop, daemon=True).start()
    return lambda: events.close()


@dataclass
class Result:
    name: str
    rollouts: int
    window_s: float
    cpu: dict[str, float]
    failed: int
    cli_calls: int

    def row(self) -> str:
        per = {k: v / self.rollouts for k, v in self.cpu.items()}
        total = sum(per.values())
        cells = " | ".join(f"{per[k]:.3f}" for k in CATEGORIES)
        docker_side = sum(per[k] for k in DOCKER_SIDE)
        return (
            f"| {self.name} | {self.window_s / self.rollouts:.3f} | {self.rollouts / self.window_s:.2f} | {cells} | "
            f"**{docker_side:.3f}** | **{total:.3f}** | {self.cli_calls / self.rollouts:.1f} | {self.failed} |"
        )


def run_config(
    path: str, level: int, rollouts: int, image: str, server_url: str, out: Path, harness: str = "bash"
) -> Result:
    name = f"measure-{harness}-{path}-c{level}-{int(time.time())}"
    request = smoke_request(
        server_url, "arena/measure", image, out, name, runtime_args={"allow": []}, max_concurrent=level
    )
    request = dataclasses.replace(request, harness=harness)  # type: ignore[arg-type]
    config = eval_config(request)
    config["env"]["docker"] = path
    config["num_rollouts"] = rollouts
    out.mkdir(parents=True, exist_ok=True)
    toml = out / f"{name}.toml"
    import tomli_w

    toml.write_text(tomli_w.dumps(config))
    shim_dir = out / f"{name}-bin"
    shim_dir.mkdir()
    calls = out / f"{name}.docker-calls"
    real = subprocess.run(["which", "docker"], capture_output=True, text=True, check=True).stdout.strip()
    (shim_dir / "docker").write_text(f'#!/bin/sh\necho "$1" >> {calls}\nexec {real} "$@"\n')
    (shim_dir / "docker").chmod(0o755)
    env = {
        **os.environ,
        API_KEY_VAR: "arena-local",
        "VF_RUN_ID": name,
        **request.env,
        "PATH": f"{shim_dir}:{os.environ['PATH']}",
    }
    vf_eval = str(Path(sys.executable).with_name("vf-eval"))
    times: list[float] = []
    with accounting(out / f"{name}.acct") as acct:
        with open(out / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(
                [vf_eval, "@", str(toml), "--no-rich", "--clean"], stdout=log, stderr=subprocess.STDOUT, env=env
            )
        sampler = Sampler(proc.pid, accounting=acct)
        close = watch_containers(f"verifiers.run={name}", sampler, times, sampler.stop)
        thread = threading.Thread(target=sampler.run, daemon=True)
        thread.start()
        proc.wait()
        sampler.stop.set()
        thread.join()
        time.sleep(0.5)
        close()
    outcome = read_outcome(request.run_dir, proc.returncode)
    window = (min(times), max(times)) if times else (0.0, 1.0)
    cli_calls = len(calls.read_text().splitlines()) if calls.exists() else 0
    return Result(
        f"{harness} {path} c={level}",
        rollouts,
        window[1] - window[0],
        sampler.per_category(*window),
        len(outcome.failures) + (rollouts - len(outcome.episodes)),
        cli_calls,
    )


def _measured(
    work: Callable[[], None], sampler: Sampler, thread: threading.Thread, close: Callable[[], None], times: list[float]
) -> tuple[float, dict[str, float], float]:
    """Run `work` in this process while the sampler watches; (container window s, CPU-s by category
    with this process's children as "docker CLI", this process's own CPU-s)."""
    before = os.times()
    with accounting(Path(f"/tmp/measure-{os.getpid()}-{time.time_ns()}.acct")) as acct:
        sampler.accounting = acct
        work()
    after = os.times()
    sampler.stop.set()
    thread.join()
    time.sleep(0.5)
    close()
    window = (min(times), max(times))
    cpu = sampler.per_category(*window)
    cpu["docker CLI"] = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    return window[1] - window[0], cpu, (after.user + after.system) - (before.user + before.system)


def run_floor(level: int, jobs: int, image: str) -> Result:
    name = f"measure-floor-c{level}-{int(time.time())}"
    sampler = Sampler(os.getpid())
    times: list[float] = []
    close = watch_containers(f"arena.session={name}", sampler, times, sampler.stop)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    argv = ["docker", "run", "--rm", "--label", f"arena.session={name}", image, "true"]

    def worker(count: int) -> None:
        for _ in range(count):
            subprocess.run(argv, check=True, capture_output=True)

    def all_jobs() -> None:
        workers = [threading.Thread(target=worker, args=(jobs // level,)) for _ in range(level)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    seconds, cpu, _own = _measured(all_jobs, sampler, thread, close, times)
    cpu["vf-eval python"] = 0.0
    return Result(f"floor `docker run --rm` c={level}", jobs, seconds, cpu, 0, jobs)


async def _box_life(box: object, image: str) -> None:
    """One rollout's docker traffic without the harness: start, task setup write, 6 execs, a read, the cut, stop."""
    import verifiers.v1 as vf

    assert isinstance(box, vf.Runtime)
    box.env = {"TASK": "1"}
    try:
        await box.start()
        await box.write("/app/task.txt", b"x" * 4096)
        await box.prepare_execution(["http://127.0.0.1:1/v1"])
        for _ in range(6):
            await box.run(["sh", "-c", "echo hi"], {})
        await box.read("/app/task.txt")
    finally:
        await box.stop()


def run_boxes(path: str, level: int, boxes: int, image: str) -> Result:
    """`boxes` box lives (`level` at a time) in this process on one docker path; CPU by process as for rollouts."""
    import asyncio

    import verifiers.v1 as vf
    from verifiers.v1.runtimes.docker import DockerRuntime

    from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

    name = f"measure-boxes-{path}-c{level}-{int(time.time())}"
    os.environ["VF_RUN_ID"] = name
    config = vf.DockerConfig(image=image, allow=[], memory=1.0, cpu=1.0)
    sampler = Sampler(os.getpid())
    times: list[float] = []
    close = watch_containers(f"verifiers.run={name}", sampler, times, sampler.stop)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()

    async def all_boxes() -> None:
        gate = asyncio.Semaphore(level)

        async def one() -> None:
            async with gate:
                await _box_life(LeanDockerRuntime(config) if path == "lean" else DockerRuntime(config), image)

        await asyncio.gather(*(one() for _ in range(boxes)))

    seconds, cpu, own = _measured(lambda: asyncio.run(all_boxes()), sampler, thread, close, times)
    # The sampler thread's own /proc scans are this process's CPU too; the scans are counted out by rate.
    cpu["vf-eval python"] = max(0.0, own - sampler.scan_cpu)
    return Result(f"box life {path} c={level}", boxes, seconds, cpu, 0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--paths", nargs="+", default=["stock", "lean"])
    parser.add_argument(
        "--harnesses", nargs="+", default=["bash"], help="bash, arena-bash, claude_code, codex, arena-codex"
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the `docker run` floor runs")
    parser.add_argument("--image", default="arena/harness:latest")
    parser.add_argument("--out", type=Path, default=Path("/tmp/lean-measure"))
    parser.add_argument("--boxes", action="store_true", help="box lives only (no vf-eval), paths interleaved")
    args = parser.parse_args()
    CALIBRATION["runc"] = runc_exec_cost(args.image)
    print(f"one runc exec: {CALIBRATION['runc'] * 1000:.1f} ms CPU", flush=True)
    results: list[Result] = []
    if args.boxes:
        for level in args.levels:
            results.append(run_floor(level, args.rollouts, args.image))
            for path in args.paths:
                results.append(run_boxes(path, level, args.rollouts, args.image))
                print(results[-1].row(), flush=True)
        print(
            "| config | wall s/box | boxes/s | "
            + " | ".join(CATEGORIES)
            + " | docker side | CPU-s/box | CLI calls | failed |"
        )
        print("|---|---:|---:|" + "---:|" * (len(CATEGORIES) + 4))
        for result in results:
            print(result.row())
        return
    with start_in_thread(policies={"arena/measure": POLICY}) as server:
        for level in args.levels:
            if not args.no_floor:
                results.append(run_floor(level, args.rollouts, args.image))
            for harness in args.harnesses:
                for path in args.paths:
                    results.append(run_config(path, level, args.rollouts, args.image, server.url, args.out, harness))
                    print(results[-1].row(), flush=True)
    print(f"\nload average at the end: {os.getloadavg()}")
    print(
        "| config | wall s/rollout | rollouts/s | "
        + " | ".join(CATEGORIES)
        + " | docker side | CPU-s/rollout | docker CLI calls/rollout | failed |"
    )
    print("|---|---:|---:|" + "---:|" * (len(CATEGORIES) + 4))
    for result in results:
        print(result.row())
    (args.out / "results.json").write_text(json.dumps([r.__dict__ for r in results], indent=1))


if __name__ == "__main__":
    main()
