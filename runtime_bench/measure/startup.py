"""Measure vf-eval's start-up: launch → first rollout, by phase, with the CPU-s each process spent.

Run: `.venv/bin/python runtime_bench/measure/startup.py [--reps 3] [--tasksets fault-localisation schema-migration]
[--harness bash]` (root, docker, the arena images). Each repetition is one vf-eval of one task at c=1 with the
oracle policy, against an in-process model server, launched as Arena launches it (`python -m arena.vf_hooks`;
`--plain`: verifiers' own `vf-eval`, the reference). Times are seconds after the launch (just before `Popen`);
a 10 ms poller watches vf-eval's process tree and its `eval.log`, docker events (label `verifiers.run=<run>`)
give the box's create time to the nanosecond:
- `log`: vf-eval's `eval.log` appears (its imports done, its config parsed);
- `server_spawn`: the shared tool server process starts (after vf-eval's imports, config, env and tasks, or at
  launch when vf_startup warms it);
- `server_up`: vf-eval logs the shared tool server's URL (its imports, port file poll and probe done);
- `rollout`: vf-eval logs the first `rollout start`; `box`: the first box's `create` event.
CPU-s are utime+stime at `rollout` of vf-eval's own process and of the tool server. On a busy machine wall
times stretch with the load; the CPU-s do not. A checkout script, not shipped in the wheel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import docker
import tomli_w

from arena.choices import HARNESSES, Harness
from arena.evalrun import API_KEY_VAR, EvalRequest, eval_config, read_outcome
from arena.server import start_in_thread
from arena.vf_hooks import DEFAULT_STARTS, LIVE_HARNESSES
from arena_kit.records import RUN_DIR_ENV

TICK = os.sysconf("SC_CLK_TCK")
BOOT = time.time() - float(Path("/proc/uptime").read_text().split()[0])
"""Boot time as epoch s to 10 ms (/proc/stat's `btime` is whole seconds: up to 1 s off every start time)."""
IMAGES = {"fault-localisation": "arena/fault-localisation:latest", "schema-migration": "arena/schema-migration:latest"}
SERVERS = ("log_search.toolset", "sqlite_sandbox.toolset", "arena_kit.box.warm_start")
DEADLINE_S = 600


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(ppid, CPU-s, start time as epoch s) of a live process, else None."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK, BOOT + int(rest[19]) / TICK


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Rep:
    taskset: str
    run: str
    times: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    reward: float | None = None
    failed: int = 0
    server_cmd: str = ""
    """The command line of vf-eval's first tool server child (a warm start runs as `arena_kit.box.warm_start`)."""


def _watch(proc: subprocess.Popen[bytes], log: Path, launched: float, rep: Rep, done: threading.Event) -> None:
    server: int | None = None
    seen = 0
    while not done.is_set() and proc.poll() is None:
        now = time.time() - launched
        if server is None:
            for entry in os.listdir("/proc"):
                if (
                    entry.isdigit()
                    and (st := _stat(int(entry)))
                    and st[0] == proc.pid
                    and any(s in _cmdline(int(entry)) for s in SERVERS)
                ):
                    server = int(entry)
                    rep.times["server_spawn"] = st[2] - launched
                    rep.server_cmd = _cmdline(server)
        if log.exists():
            rep.times.setdefault("log", now)
            text = log.read_text(errors="replace")
            if "shared tool server" in text[seen:] and "server_up" not in rep.times:
                rep.times["server_up"] = now
            if "rollout start" in text[seen:] and "rollout" not in rep.times:
                rep.times["rollout"] = now
                own = _stat(proc.pid)
                rep.cpu["vf-eval"] = own[1] if own else float("nan")
                tool = _stat(server) if server else None
                rep.cpu["tool server"] = tool[1] if tool else 0.0
                return
            seen = max(0, len(text) - 200)
        time.sleep(0.01)


def measure(taskset: str, harness: Harness, base_url: str, out: Path, name: str, hooks: bool = True) -> Rep:
    request = EvalRequest(
        taskset=taskset,
        harness=harness,
        model=f"arena/{taskset}/oracle",
        image=IMAGES[taskset],
        base_url=base_url,
        run_name=name,
        output_dir=out,
        num_tasks=1,
        max_concurrent=1,
    )
    config = eval_config(request)
    config["env"]["taskset"]["split"] = "dev"
    toml = out / f"{name}.toml"
    toml.write_text(tomli_w.dumps(config))
    rep = Rep(taskset, name)
    client = docker.from_env()
    events = client.events(
        filters={"label": f"verifiers.run={name}", "type": "container", "event": "create"}, decode=True
    )
    starts = DEFAULT_STARTS if harness in LIVE_HARNESSES else 0
    env = {**os.environ, API_KEY_VAR: "arena-local", "VF_RUN_ID": name, RUN_DIR_ENV: str(request.run_dir.resolve())}
    done = threading.Event()
    with open(out / f"{name}.log", "wb") as log:
        launched = time.time()
        launcher = (
            [sys.executable, "-m", "arena.vf_hooks", str(starts)]
            if hooks
            else [str(Path(sys.executable).with_name("vf-eval"))]
        )
        proc = subprocess.Popen(
            [*launcher, "@", str(toml), "--no-rich", "--clean"], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        boxes: list[float] = []

        def on_events() -> None:
            for event in events:
                boxes.append(event["time"] + event.get("timeNano", 0) % 10**9 / 1e9)
                return

        threading.Thread(target=on_events, daemon=True).start()
        watcher = threading.Thread(
            target=_watch,
            args=(proc, request.run_dir / "logs" / "latest" / "eval.log", launched, rep, done),
            daemon=True,
        )
        watcher.start()
        try:
            proc.wait(DEADLINE_S)
        finally:
            done.set()
            events.close()
            if proc.poll() is None:
                proc.kill()
    if boxes:
        rep.times["box"] = boxes[0] - launched
    rep.times["exit"] = time.time() - launched
    outcome = read_outcome(request.run_dir, proc.returncode)
    rep.failed = len(outcome.failures) + (0 if outcome.episodes else 1)
    rewards = [e.reward for e in outcome.episodes if getattr(e, "reward", None) is not None]
    rep.reward = rewards[0] if rewards else None
    return rep


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tasksets", nargs="+", default=list(IMAGES), choices=list(IMAGES))
    parser.add_argument("--harness", default="bash", choices=HARNESSES)
    parser.add_argument(
        "--plain",
        action="store_true",
        help="launch verifiers' own vf-eval script (no Arena hooks), the reference without arena.vf_startup",
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/arena-startup"))
    parser.add_argument("--label", default="run", help="a tag for the run names and the JSON lines")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    reps: list[Rep] = []
    with start_in_thread() as server:
        for taskset in args.tasksets:
            for i in range(args.reps):
                load = _load()
                rep = measure(
                    taskset,
                    args.harness,
                    server.url,
                    args.out,
                    f"startup-{args.label}-{args.harness}-{taskset}-{i}-{os.getpid()}",
                    hooks=not args.plain,
                )
                reps.append(rep)
                print(
                    json.dumps({"label": args.label, "harness": args.harness, "load_before": load, **asdict(rep)}),
                    flush=True,
                )
    for taskset in args.tasksets:
        mine = [r for r in reps if r.taskset == taskset]
        keys = ("log", "server_spawn", "server_up", "rollout", "box")
        medians = {k: statistics.median(r.times.get(k, float("nan")) for r in mine) for k in keys}
        cpu = {k: statistics.median(r.cpu.get(k, float("nan")) for r in mine) for k in ("vf-eval", "tool server")}
        print(
            f"{args.label} {args.harness} {taskset}: median s after launch "
            + ", ".join(f"{k} {v:.2f}" for k, v in medians.items())
            + "; CPU-s at rollout "
            + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
            + f"; failed {sum(r.failed for r in mine)}"
        )


if __name__ == "__main__":
    main()
