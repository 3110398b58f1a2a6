"""The noisy-neighbour suite (issue 40): beside an honest rollout of the same eval, on the same engine, one box
at a time takes all it can of what boxes share, and nobody else notices.

The eval (taskset tests/support/arena_isolation, Arena's isolation defaults, `arena-bash` on the lean path,
`bash` on the stock one) runs an attacker, held at its first shell step all along, and honest rollouts, all
at once (the eval's concurrency is its rollouts: every box boots before the first attack), each held until
the test releases it, one at a time. The first honest rollout runs with the attacker idle:
its wall time (from its release to its answer, as the host recorded them) is the quiet time. Then, for each
attack in `ATTACKS`, the test asserts from the host the limit the attack meets, runs it in the attacker's
box as its agent (`arena_testkit.neighbour_attacks`: it takes all it can and holds it), and releases the
next honest rollout meanwhile. Every honest rollout must score 1.0 within twice the quiet time; while each
attack holds, the eval process must stay within +500 MiB of its resident memory before the attacks and
within half its open-file limit, and the host's file table under `file_table.SHARE` of its size. Every
attack runs under a hard timeout in the box and on the host, and is stopped by a file the host writes
into the box's `/tmp` (no exec needed, so a box at its PIDs limit still stops)."""

from __future__ import annotations

import contextlib
import json
import pwd
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

import arena.evalrun
from arena.evalrun import EvalRequest, run_eval
from arena.server import start_in_thread
from arena_kit.isolation import ISOLATION
from arena_kit.policy import Action, Answer, Observation, RunShell
from arena_kit.runtimes.agent_uids import FIRST_UID, UIDS
from arena_kit.runtimes.file_table import HEADROOM, SHARE, host_file_max
from arena_kit.verifiers_seam import bounds
from arena_testkit import SUPPORT
from arena_testkit.box_watch import docker, docker_inspect, host_cgroup, in_thread
import arena_testkit.neighbour_attacks as attacks

pytestmark = pytest.mark.docker

MODEL = "arena/neighbours"
PATHS = {"lean": "arena-bash", "stock": "bash"}
ATTACK_SOURCE = Path(attacks.__file__).read_text()
RECORD = attacks.AGENT_RECORD
EVAL_DEADLINE_S = 900.0
PHASE_S = 180
"""Hard limit of one attack, in the box and (+30 s) on the host."""
SLACK_MIB = 500


def _hold(role: str, record: bool) -> str:
    return f"""python3 - <<'PY'
import json, os, pathlib, time
if {record!r}:
    json.dump({{"env": dict(os.environ), "uid": os.getuid()}}, open("{RECORD}", "w"))
pathlib.Path("/tmp/arena-ready-{role}").touch()
end = time.time() + 600
while time.time() < end and not os.path.exists("/tmp/arena-go-{role}"):
    time.sleep(0.1)
print(("RELEASED-" if os.path.exists("/tmp/arena-go-{role}") else "NOT-RELEASED-") + "{role}")
PY"""


HONEST_WORK = ("python3 -c 'import hashlib; [hashlib.sha256(b\"x\" * 4096).digest() for _ in range(100000)]'; "
               "echo arena-isolation-ok > done.txt; cat done.txt")


def policy(obs: Observation) -> Action:
    role = "attacker" if "ROLE: attacker" in obs.prompt else "honest"
    script = [_hold(role, record=role == "attacker")] + ([HONEST_WORK, "ls -l done.txt"] if role == "honest" else [])
    step = len(obs.steps)
    return RunShell(script[step]) if step < len(script) else Answer("DONE")


@dataclass
class Watch:
    """The eval process and the host, sampled while an attack holds."""

    pid: int
    rss_kib: list[int] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)
    files: list[int] = field(default_factory=list)

    def sample(self) -> None:
        status = Path(f"/proc/{self.pid}/status").read_text()
        self.rss_kib.append(int(re.search(r"VmRSS:\s+(\d+)", status).group(1)))  # type: ignore[union-attr]
        self.fds.append(len(list(Path(f"/proc/{self.pid}/fd").iterdir())))
        self.files.append(int(Path("/proc/sys/fs/file-nr").read_text().split()[0]))


@contextlib.contextmanager
def _watching(watch: Watch) -> Iterator[None]:
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError, AttributeError):
                watch.sample()
            stop.wait(0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def _eval_pid(run: str) -> int:
    """The vf-eval process of the run (its config path names the run)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if any(run.encode() in a for a in argv) and any(b"vf_hooks" in a or b"vf-eval" in a for a in argv):
                    return int(proc.name)
    raise AssertionError(f"no vf-eval process of run {run}")


def _open_files_limit(pid: int) -> int:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith("Max open files"))
    return int(line.split()[3])


def _box_path(container: str, path: str) -> Path:
    """`path` in the box, as the host reaches it (its init's root)."""
    return Path(f"/proc/{docker_inspect(container)['State']['Pid']}/root{path}")


def _held(run: str, role: str, taken: set[str], deadline_s: float = 240) -> str:
    """The next container of the run (not in `taken`) whose rollout holds at its `role` step."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for container in docker("ps", "-q", "--filter", f"label=verifiers.run={run}").stdout.split():
            if container not in taken and docker("exec", container, "test", "-e", f"/tmp/arena-ready-{role}").returncode == 0:
                taken.add(container)
                return container
        time.sleep(0.3)
    raise AssertionError(f"no {role} rollout held within {deadline_s} s")


def _agent_uid(container: str) -> int:
    return int(docker("exec", container, "id", "-u", ISOLATION.agent_user).stdout.strip())


def _inotify_as(argv: list[str], python: str = "python3") -> str:
    done = subprocess.run([*argv, python, "-c", "import ctypes; print(ctypes.CDLL(None).inotify_init() >= 0)"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or done.stderr.strip()[-200:]


@dataclass
class Attack:
    name: str
    args: Callable[["Boxes"], list[str]]
    limit: Callable[["Boxes"], None]
    """Asserts, from the host, the limit the attack meets."""
    check: Callable[["Boxes", dict[str, Any]], None]
    """Asserts what the attack got."""
    paths: tuple[str, ...] = ("lean", "stock")
    during: Callable[["Boxes"], None] = lambda boxes: None
    """Asserts, while the attack holds, what its neighbours still get."""


@dataclass
class Boxes:
    attacker: str
    honest: str = ""
    inspected: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 0

    @property
    def host(self) -> dict[str, Any]:
        return self.inspected["HostConfig"]


def _files_limit(boxes: Boxes) -> None:
    nofile = {u["Name"]: u for u in boxes.host["Ulimits"] or []}.get("nofile")
    assert nofile is not None and nofile["Soft"] == nofile["Hard"], boxes.host["Ulimits"]
    pids = boxes.host["PidsLimit"]
    assert (boxes.concurrency + HEADROOM) * pids * nofile["Hard"] <= SHARE * host_file_max(), (pids, nofile)


def _files_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    nofile = {u["Name"]: u for u in boxes.host["Ulimits"]}["nofile"]["Hard"]
    assert seen["limit"] == [nofile, nofile] and seen["errors"] == ["EMFILE"], seen
    # each child also holds the pipes it inherited, so it opens fewer than its limit of eventfds
    assert seen["files"] >= seen["processes"] * nofile // 2 and seen["files"] <= boxes.host["PidsLimit"] * nofile


def _inotify_limit(boxes: Boxes) -> None:
    mine, theirs = _agent_uid(boxes.attacker), _agent_uid(boxes.honest)
    assert FIRST_UID <= mine < FIRST_UID + UIDS and mine != theirs, (mine, theirs)
    with pytest.raises(KeyError):
        pwd.getpwuid(mine)  # no host user has it


def _inotify_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    assert seen["error"] == "EMFILE" and seen["instances"] > 0, seen


def _inotify_during(boxes: Boxes) -> None:
    honest = _agent_uid(boxes.honest)
    assert _inotify_as(["docker", "exec", "-u", f"{honest}:{honest}", boxes.honest]) == "True"  # the neighbour's agent
    assert _inotify_as(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"], "/usr/bin/python3") == "True"  # the host's uid 1000


def _bodies_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    assert seen["limit"].startswith("HTTP/1.1 413"), seen  # one byte over the cap
    assert not any(" 200 " in status for status in seen["gigabytes"]), seen


def _connections_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    assert seen["kept"] <= bounds.CONNECTIONS and seen["refused"] > 0, seen


def _cpu_limit(boxes: Boxes) -> None:
    assert boxes.host["NanoCpus"] == int(ISOLATION.cpu * 1e9)


def _pids_limit(boxes: Boxes) -> None:
    assert boxes.host["PidsLimit"] and int(host_cgroup(boxes.attacker, "pids", "pids.max").read_text()) == boxes.host["PidsLimit"]


def _memory_limit(boxes: Boxes) -> None:
    assert boxes.host["Memory"] == int(ISOLATION.memory * 1024**3)


def _tmpfs_limit(boxes: Boxes) -> None:
    assert boxes.host["ReadonlyRootfs"] and f"size={ISOLATION.tmp_mb}m" in boxes.host["Tmpfs"]["/tmp"]


ATTACKS = [
    Attack("files", lambda b: [str(b.host["PidsLimit"] - 24)], _files_limit, _files_check),
    Attack("inotify", lambda b: [], _inotify_limit, _inotify_check, during=_inotify_during),
    Attack("bodies", lambda b: [str(bounds.BODY_CAP)], lambda b: None, _bodies_check),
    Attack("connections", lambda b: ["3000", "20"], lambda b: None, _connections_check),
    Attack("spin", lambda b: ["4"], _cpu_limit, lambda b, s: None),
    Attack("fork", lambda b: [], _pids_limit, lambda b, s: None),
    Attack("memory", lambda b: [str(int(ISOLATION.memory * 2 * 1024))], _memory_limit,
           lambda b, s: None if s["signal"] == 9 else pytest.fail(f"the hog was not OOM-killed: {s}")),
    Attack("tmpfs", lambda b: ["/tmp"], _tmpfs_limit, lambda b, s: None if s["error"] == "ENOSPC" else pytest.fail(str(s)), ("lean",)),
]


def _run_attack(boxes: Boxes, attack: Attack, uid: int) -> dict[str, Any]:
    """The attack in the attacker's box, as its agent, until the test stops it: its answer."""
    done = docker("exec", "-i", "-u", f"{uid}:{uid}", "-w", "/tmp", boxes.attacker, "timeout", "-s", "KILL", str(PHASE_S),
                  "python3", "-", attack.name, *attack.args(boxes), timeout=PHASE_S + 30, stdin=ATTACK_SOURCE)
    lines = done.stdout.strip().splitlines()
    assert lines, f"the {attack.name} attack exited {done.returncode}: {done.stderr.strip()[-500:]}"
    return dict(json.loads(lines[-1]))


def _walls(run_dir: Path) -> dict[str, float]:
    """Each honest rollout's box → seconds from its release (the held step's result) to its answer."""
    walls = {}
    for line in (run_dir / "traces.jsonl").read_text().splitlines():
        for trace in json.loads(line).get("traces") or []:
            nodes = trace.get("nodes") or []
            released = [n["timestamp"] for n in nodes if "RELEASED-honest" in json.dumps(n.get("message", {}).get("content", ""))]
            if released:
                walls[trace["agent"]["runtime"]["id"]] = nodes[-1]["timestamp"] - released[0]
    return walls


@pytest.fixture(params=sorted(PATHS))
def docker_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    path: str = request.param
    plain = arena.evalrun.eval_config

    def on_path(eval_request: EvalRequest) -> dict[str, Any]:
        config = plain(eval_request)
        config["env"]["docker"] = path
        return config

    monkeypatch.setattr(arena.evalrun, "eval_config", on_path)
    return path


def test_no_box_harms_its_neighbours(images, tmp_path, docker_path):
    chosen = [a for a in ATTACKS if docker_path in a.paths]
    run = f"neighbours-{docker_path}-{uuid.uuid4().hex[:6]}"
    roles = ["attacker"] + ["honest"] * (1 + len(chosen))
    request = EvalRequest(taskset="arena-isolation", harness=PATHS[docker_path], model=MODEL, image=images["harness"], base_url="",
                          run_name=run, output_dir=tmp_path, num_tasks=len(roles), max_concurrent=len(roles), taskset_args={"roles": roles},
                          env={"PYTHONPATH": str(SUPPORT)}, deadline_s=EVAL_DEADLINE_S)
    taken: set[str] = set()
    phases: list[tuple[str, str, Watch, dict[str, Any]]] = []
    with start_in_thread(policies={MODEL: policy}) as server:
        request = replace(request, base_url=server.url)
        with in_thread(lambda: run_eval(request, progress=lambda _l: None)) as done:
            attacker = _held(run, "attacker", taken)
            pid = _eval_pid(run)
            files_limit = _open_files_limit(pid)
            base = Watch(pid)
            honest = _held(run, "honest", taken)
            base.sample()
            docker("exec", honest, "touch", "/tmp/arena-go-honest")
            phases.append(("quiet", honest, base, {}))
            uid = _agent_uid(attacker)
            try:
                for attack in chosen:
                    boxes = Boxes(attacker, _held(run, "honest", taken), docker_inspect(attacker), len(roles))
                    attack.limit(boxes)
                    watch = Watch(pid)
                    with _watching(watch), in_thread(lambda a=attack: _run_attack(boxes, a, uid)) as result:
                        ready = _box_path(attacker, f"/tmp/arena-neighbour-{attack.name}")
                        end = time.monotonic() + PHASE_S
                        while not ready.exists() and not result and time.monotonic() < end:
                            time.sleep(0.2)
                        assert ready.exists(), f"the {attack.name} attack never took hold: {result}"
                        attack.during(boxes)
                        docker("exec", boxes.honest, "touch", "/tmp/arena-go-honest")
                        while boxes.honest in docker("ps", "-q").stdout:
                            time.sleep(0.2)
                        _box_path(attacker, attacks.STOP).touch()
                    seen = result["value"]
                    _box_path(attacker, attacks.STOP).unlink()
                    _box_path(attacker, f"/tmp/arena-neighbour-{attack.name}").unlink()
                    attack.check(boxes, seen)
                    phases.append((attack.name, boxes.honest, watch, seen))
            finally:
                with contextlib.suppress(Exception):
                    _box_path(attacker, attacks.STOP).touch()
                docker("exec", attacker, "touch", "/tmp/arena-go-attacker")
    outcome = done["value"]
    walls = _walls(outcome.run_dir)
    rows = []
    quiet = walls[phases[0][1]]
    for name, honest, watch, seen in phases:
        wall = walls.get(honest, float("nan"))
        rss = (max(watch.rss_kib, default=0) - base.rss_kib[0]) // 1024
        rows.append(f"{name:12} honest {wall:5.2f} s  eval +{rss} MiB, {max(watch.fds, default=0)} fds  host files {max(watch.files, default=0)}  {seen}")
    print("\nnoisy neighbours, " + docker_path + ":\n" + "\n".join(rows))
    honest_episodes = [e for e in outcome.episodes if e.task.endswith("honest")]
    assert len(honest_episodes) == len(phases) and all(not e.failed and e.reward == 1.0 for e in honest_episodes), honest_episodes
    attacked = next(e for e in outcome.episodes if e.task.endswith("attacker"))
    assert attacked.stop_condition == "boxoverbound_error", attacked  # the bodies' bound: the agent's outcome
    for name, honest, watch, _seen in phases[1:]:
        assert walls[honest] <= 2 * quiet, f"{name}: the honest rollout took {walls[honest]:.2f} s, quiet {quiet:.2f} s"
        assert max(watch.rss_kib) - base.rss_kib[0] <= SLACK_MIB * 1024, f"{name}: the eval process grew by {max(watch.rss_kib) - base.rss_kib[0]} KiB"
        assert max(watch.fds) <= files_limit // 2, f"{name}: the eval process held {max(watch.fds)} of {files_limit} files"
        assert max(watch.files) <= SHARE * host_file_max(), f"{name}: the host's file table held {max(watch.files)}"
