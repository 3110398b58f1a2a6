"""The noisy-neighbour suite (issue 40): beside an honest rollout of the same eval, on the same engine, one box
at a time takes all it can of what boxes share, and nobody else notices.

The eval (taskset tests/support/arena_isolation, Arena's isolation defaults, `arena-bash` on the lean path,
`bash` on the stock one) runs an attacker for each attack, held at its first shell step all along (an attack
that ends its rollout may end its box: the stock path removes it), and honest rollouts, all at once (the
eval's concurrency is its rollouts: every box boots before the first attack), each held until the test
releases it, one at a time. For each attack in `ATTACKS` the test asserts from the host the limit
the attack meets, runs it in its attacker's box as its agent (`arena_testkit.neighbour_attacks`: it takes
all it can and holds it), and lets the next honest rollout run its work `WORKS` times before the attack,
`WORKS` times while it holds and `WORKS` times once it stopped. Every honest rollout must score 1.0, and
the best of its attacked work steps take at most twice the CPU time of its quiet ones (the mean of the best
before and the best after: the reference brackets the attack on the same box within seconds, so a drift
cancels out, and the best of each run drops a step another process's burst disturbed). CPU time, not wall
time: on this machine (2 cores, a load of 9 from other work) one honest step's wall time ranged 0.35-5.9 s
within a minute with no attack running, and twice a wall time measured so proves nothing either way. What
the wall time stood for is held otherwise: CPU starvation by the CPU quota (asserted on the live box before
the spin attack), the eval process by its memory and open files (below), and what the CPU time catches is
an attack that makes the honest work itself costlier (memory reclaim, cache, the kernel's locks). Wall
times are still measured and printed. A first honest rollout runs with
the attacker idle (every run quiet). While each attack holds, the eval process must stay within +500 MiB of
its resident memory before the attacks and within half its open-file limit, and the host's file table
under `file_table.SHARE` of its size. The last attack maps files no descriptor holds (twice the box's
share) and is stopped by the eval's file-table watch: it first asserts the watch runs, and the eval's log
must name the box it stopped. Every attack runs under a hard timeout in the box and on the host, and is
stopped by a file the host writes into the box's `/tmp` (no exec needed, so a box at its PIDs limit still
stops)."""

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
from arena_kit.box.isolation import ISOLATION
from arena_kit.policy import Action, Answer, Observation, RunShell
from arena_kit.runtimes.agent_uids import FIRST_UID, UIDS
from arena_kit.runtimes import file_watch
from arena_kit.runtimes.file_table import HEADROOM, SHARE, box_files, host_file_max
from arena_kit.verifiers_seam import bounds
from arena_testkit import SUPPORT
from arena_testkit.box_watch import docker, docker_inspect, host_cgroup, in_thread
import arena_testkit.neighbour_attacks as attacks

pytestmark = pytest.mark.docker

MODEL = "arena/neighbours"
PATHS = {"lean": "arena-bash", "stock": "bash"}
ATTACK_SOURCE = Path(attacks.__file__).read_text()
RECORD = attacks.AGENT_RECORD
EVAL_DEADLINE_S = 1800.0
"""Hard limit of the eval (both paths took 8-14 min on a 2-core machine at a load of 20-36)."""
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


HONEST_WORK = (
    "python3 -c 'import hashlib, time; t = time.process_time(); "
    '[hashlib.sha256(b"x" * 4096).digest() for _ in range(100000)]; '
    'print("WORK-" + "CPU=%.4f" % (time.process_time() - t))\'; '  # the marker is in its output alone
    "echo arena-isolation-ok > done.txt; cat done.txt"
)
WORK_CPU = re.compile(r"WORK-CPU=(\d+\.\d+)")
WORKS = 2
"""Work steps an honest rollout runs before an attack, while it holds, and after it stopped (the best of each counts)."""
SEGMENTS = ("honest", "attack", "quiet")
"""The holds an honest rollout waits at: each opens one run of `WORKS` work steps (before, during, after the attack)."""


def policy(obs: Observation) -> Action:
    role = "attacker" if "ROLE: attacker" in obs.prompt else "honest"
    honest = [step for segment in SEGMENTS[1:] for step in (_hold(segment, record=False), *[HONEST_WORK] * WORKS)]
    script = [_hold(role, record=role == "attacker")] + (
        [*[HONEST_WORK] * WORKS, *honest, "ls -l done.txt"] if role == "honest" else []
    )
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
    line = next(
        line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith("Max open files")
    )
    return int(line.split()[3])


def _box_path(container: str, path: str) -> Path:
    """`path` in the box, as the host reaches it (its init's root)."""
    return Path(f"/proc/{docker_inspect(container)['State']['Pid']}/root{path}")


def _present(container: str, path: str) -> bool:
    """Whether `path` is in the box (False once the box is gone: the stock path removes a box whose rollout ended)."""
    with contextlib.suppress(AssertionError, OSError):
        return _box_path(container, path).exists()
    return False


def _held(run: str, role: str, taken: set[str], deadline_s: float = 240) -> str:
    """The next container of the run (not in `taken`) whose rollout holds at its `role` step."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for container in docker("ps", "-q", "--filter", f"label=verifiers.run={run}").stdout.split():
            if (
                container not in taken
                and docker("exec", container, "test", "-e", f"/tmp/arena-ready-{role}").returncode == 0
            ):
                taken.add(container)
                return container
        time.sleep(0.3)
    raise AssertionError(f"no {role} rollout held within {deadline_s} s")


def _agent_uid(container: str) -> int:
    return int(docker("exec", container, "id", "-u", ISOLATION.agent_user).stdout.strip())


def _inotify_as(argv: list[str], python: str = "python3") -> str:
    done = subprocess.run(
        [*argv, python, "-c", "import ctypes; print(ctypes.CDLL(None).inotify_init() >= 0)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
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
    stops: bool = False
    """The attack ends its rollout as the agent's `boxoverbound_error` (after which the stock path may remove its box)."""


@dataclass
class Boxes:
    attacker: str
    honest: str = ""
    inspected: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 0
    eval_pid: int = 0

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
    # every instance its uid may hold, taken (the host's per-user limit)
    assert seen["errors"] == ["EMFILE"] and seen["instances"] == int(
        Path("/proc/sys/fs/inotify/max_user_instances").read_text()
    ), seen


def _inotify_during(boxes: Boxes) -> None:
    honest = _agent_uid(boxes.honest)
    assert _inotify_as(["docker", "exec", "-u", f"{honest}:{honest}", boxes.honest]) == "True"  # the neighbour's agent
    assert (
        _inotify_as(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"], "/usr/bin/python3") == "True"
    )  # the host's uid 1000


def _bodies_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    assert seen["limit"].startswith("HTTP/1.1 413"), seen  # one byte over the cap
    assert not any(" 200 " in status for status in seen["gigabytes"]), seen


def _connections_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    assert seen["kept"] <= bounds.CONNECTIONS and seen["refused"] > 0, seen


def _cpu_limit(boxes: Boxes) -> None:
    assert boxes.host["NanoCpus"] == int(ISOLATION.cpu * 1e9)


def _pids_limit(boxes: Boxes) -> None:
    assert (
        boxes.host["PidsLimit"]
        and int(host_cgroup(boxes.attacker, "pids", "pids.max").read_text()) == boxes.host["PidsLimit"]
    )


def _memory_limit(boxes: Boxes) -> None:
    assert boxes.host["Memory"] == int(ISOLATION.memory * 1024**3)


def _tmpfs_limit(boxes: Boxes) -> None:
    assert boxes.host["ReadonlyRootfs"] and f"size={ISOLATION.tmp_mb}m" in boxes.host["Tmpfs"]["/tmp"]


def _share(boxes: Boxes) -> int:
    return box_files(ISOLATION.pids, boxes.concurrency).per_box


def _watch_limit(boxes: Boxes) -> None:
    threads = {comm.read_text().strip() for comm in Path(f"/proc/{boxes.eval_pid}/task").glob("*/comm")}
    assert file_watch.THREAD_NAME in threads, threads  # the eval process's file-table watch runs
    assert 2 * _share(boxes) < (1 - SHARE) * host_file_max()  # what the attack maps fits well inside the table


def _mappings_check(boxes: Boxes, seen: dict[str, Any]) -> None:
    # killed while it held (the eval's log names the watch); on the stock path its box may be removed meanwhile
    assert seen["exit"] != 0 and seen.get("started") and not seen.get("survived"), seen


ATTACKS = [
    Attack("files", lambda b: [str(b.host["PidsLimit"] - 24)], _files_limit, _files_check),
    Attack("inotify", lambda b: [], _inotify_limit, _inotify_check, during=_inotify_during),
    Attack("bodies", lambda b: [str(bounds.BODY_CAP)], lambda b: None, _bodies_check, stops=True),
    Attack("connections", lambda b: ["3000", "20"], lambda b: None, _connections_check, stops=True),
    Attack("spin", lambda b: ["4"], _cpu_limit, lambda b, s: None),
    Attack("fork", lambda b: [], _pids_limit, lambda b, s: None),
    Attack(
        "memory",
        lambda b: [str(int(ISOLATION.memory * 2 * 1024))],
        _memory_limit,
        lambda b, s: None if s["signal"] == 9 else pytest.fail(f"the hog was not OOM-killed: {s}"),
    ),
    Attack(
        "tmpfs",
        lambda b: ["/tmp"],
        _tmpfs_limit,
        lambda b, s: None if s["error"] == "ENOSPC" else pytest.fail(str(s)),
        ("lean",),
    ),
    Attack(
        "mappings",
        lambda b: [str(_share(b)), str(2 * _share(b) // 60_000 + 1)],
        _watch_limit,
        _mappings_check,
        stops=True,
    ),
]


def _run_attack(boxes: Boxes, attack: Attack, uid: int) -> dict[str, Any]:
    """The attack in the attacker's box, as its agent, until the test stops it: its answer."""
    done = docker(
        "exec",
        "-i",
        "-u",
        f"{uid}:{uid}",
        "-w",
        "/tmp",
        boxes.attacker,
        "timeout",
        "-s",
        "KILL",
        str(PHASE_S),
        "python3",
        "-",
        attack.name,
        *attack.args(boxes),
        timeout=PHASE_S + 30,
        stdin=ATTACK_SOURCE,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"the {attack.name} attack exited {done.returncode}: {done.stderr.strip()[-500:]}"
    return {**json.loads(lines[-1]), "exit": done.returncode}


@dataclass
class Times:
    """An honest rollout's work, before the attack, while it held and after it stopped: the best step of each run."""

    cpu: tuple[float, float, float]
    """CPU seconds of the work (its process's user and system time, as it reported them)."""
    wall: tuple[float, float, float]
    """Wall seconds of the step, from the result before it to its own, as the host recorded them."""

    def ratio(self, times: tuple[float, float, float]) -> float:
        """The attacked step over the quiet ones at its time (the mean of before and after: a drift cancels out)."""
        return times[1] / ((times[0] + times[2]) / 2)


def _times(run_dir: Path) -> dict[str, Times]:
    """Each honest rollout's box → its work's `Times`."""
    found = {}
    markers = (*(f"RELEASED-{segment}" for segment in SEGMENTS), "WORK-CPU=")
    for line in (run_dir / "traces.jsonl").read_text().splitlines():
        for trace in json.loads(line).get("traces") or []:
            marks = [
                (n["timestamp"], json.dumps(n.get("message", {}).get("content", ""))) for n in trace.get("nodes") or []
            ]
            results = [(at, text) for at, text in marks if any(m in text for m in markers)]
            if len(results) != len(SEGMENTS) * (1 + WORKS):
                continue
            walls = [later[0] - earlier[0] for earlier, later in zip(results, results[1:], strict=False)]
            cpus = [
                float(found_cpu.group(1)) if (found_cpu := WORK_CPU.search(text)) else float("nan")
                for _, text in results[1:]
            ]
            found[trace["agent"]["runtime"]["id"]] = Times(cpu=_best(cpus), wall=_best(walls))
    return found


def _best(steps: list[float]) -> tuple[float, float, float]:
    """The best work step of each run (`steps` are the steps after the first hold: each run's, then its hold's)."""
    before, during, after = (min(steps[i * (WORKS + 1) : i * (WORKS + 1) + WORKS]) for i in range(len(SEGMENTS)))
    return before, during, after


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


def _released(container: str, role: str) -> None:
    """Let the honest rollout in `container` past its `role` hold."""
    assert docker("exec", container, "touch", f"/tmp/arena-go-{role}").returncode == 0


def _reached(container: str, role: str, deadline_s: float = PHASE_S) -> None:
    """Wait until the honest rollout in `container` holds at its `role` step."""
    end = time.monotonic() + deadline_s
    while docker("exec", container, "test", "-e", f"/tmp/arena-ready-{role}").returncode != 0:
        assert time.monotonic() < end, f"the honest rollout never reached its {role} hold"
        time.sleep(0.2)


def _ended(container: str, deadline_s: float = PHASE_S) -> None:
    end = time.monotonic() + deadline_s
    while container in docker("ps", "-q").stdout:
        assert time.monotonic() < end, f"the honest rollout in {container} never ended"
        time.sleep(0.2)


def test_no_box_harms_its_neighbours(images, tmp_path, docker_path):
    chosen = [a for a in ATTACKS if docker_path in a.paths]
    run = f"neighbours-{docker_path}-{uuid.uuid4().hex[:6]}"
    roles = ["attacker"] * len(chosen) + ["honest"] * (1 + len(chosen))  # an attacker's box of its own for each attack
    request = EvalRequest(
        taskset="arena-isolation",
        harness=PATHS[docker_path],
        model=MODEL,
        image=images["harness"],
        base_url="",
        run_name=run,
        output_dir=tmp_path,
        num_tasks=len(roles),
        max_concurrent=len(roles),
        taskset_args={"roles": roles},
        env={"PYTHONPATH": str(SUPPORT)},
        deadline_s=EVAL_DEADLINE_S,
    )
    taken: set[str] = set()
    phases: list[tuple[str, str, Watch, dict[str, Any]]] = []
    attackers: dict[str, str] = {}
    """attack → the box it ran in"""
    with start_in_thread(policies={MODEL: policy}) as server:
        request = replace(request, base_url=server.url)
        with in_thread(lambda: run_eval(request, progress=lambda _l: None)) as done:
            attackers.update((attack.name, _held(run, "attacker", taken)) for attack in chosen)
            pid = _eval_pid(run)
            files_limit = _open_files_limit(pid)
            base = Watch(pid)
            honest = _held(run, "honest", taken)
            base.sample()
            for segment, following in zip(SEGMENTS, (*SEGMENTS[1:], ""), strict=True):  # no attack: every run is quiet
                _released(honest, segment)
                if following:
                    _reached(honest, following)
                else:
                    _ended(honest)
            phases.append(("idle", honest, base, {}))
            try:
                for attack in chosen:
                    attacker = attackers[attack.name]
                    uid = _agent_uid(attacker)
                    boxes = Boxes(attacker, _held(run, "honest", taken), docker_inspect(attacker), len(roles), pid)
                    attack.limit(boxes)
                    _released(boxes.honest, "honest")  # its work before the attack
                    _reached(boxes.honest, "attack")
                    watch = Watch(pid)
                    with _watching(watch), in_thread(lambda a=attack: _run_attack(boxes, a, uid)) as result:
                        ready = f"/tmp/arena-neighbour-{attack.name}"
                        end = time.monotonic() + PHASE_S
                        while not _present(attacker, ready) and not result and time.monotonic() < end:
                            time.sleep(0.2)
                        assert _present(attacker, ready) or (attack.stops and result), (
                            f"the {attack.name} attack never took hold: {result}"
                        )
                        attack.during(boxes)
                        _released(boxes.honest, "attack")  # its work while the attack holds
                        _reached(boxes.honest, "quiet")
                        with contextlib.suppress(AssertionError, OSError):  # a box the host stopped may be gone
                            _box_path(attacker, attacks.STOP).touch()
                    seen = result["value"]
                    _released(boxes.honest, "quiet")  # its work after the attack stopped
                    _ended(boxes.honest)
                    attack.check(boxes, seen)
                    phases.append((attack.name, boxes.honest, watch, seen))
            finally:
                for attacker in attackers.values():
                    with contextlib.suppress(Exception):
                        _box_path(attacker, attacks.STOP).touch()
                    docker("exec", attacker, "touch", "/tmp/arena-go-attacker")
    outcome = done["value"]
    times = _times(outcome.run_dir)
    rows = []
    for name, honest, watch, seen in phases:
        cpu, wall = (times[honest].cpu, times[honest].wall) if honest in times else ((float("nan"),) * 3,) * 2
        rss = (max(watch.rss_kib, default=0) - base.rss_kib[0]) // 1024
        rows.append(
            f"{name:12} honest cpu {cpu[1]:.2f} s (quiet {cpu[0]:.2f}, {cpu[2]:.2f}) wall {wall[1]:5.2f} s (quiet {wall[0]:5.2f}, "
            f"{wall[2]:5.2f})  eval +{rss} MiB, {max(watch.fds, default=0)} fds  "
            f"host files {max(watch.files, default=0)}  {seen}"
        )
    print("\nnoisy neighbours, " + docker_path + ":\n" + "\n".join(rows))
    honest_episodes = [e for e in outcome.episodes if e.task.endswith("honest")]
    assert len(honest_episodes) == len(phases) and all(not e.failed and e.reward == 1.0 for e in honest_episodes), (
        honest_episodes
    )
    by_box = {e.runtime_id: e for e in outcome.episodes}
    for attack in chosen:
        if attack.stops:  # the bounds': the agent's outcome
            assert by_box[attackers[attack.name]].stop_condition == "boxoverbound_error", (
                attack.name,
                by_box[attackers[attack.name]],
            )
    log = (outcome.run_dir / "vf-eval.log").read_text()
    assert (
        f"file-table watch: stopping box {attackers['mappings'][:12]}" in log
    )  # the watch, not something else, stopped it
    for name, honest, watch, _seen in phases[1:]:
        work = times[honest]
        assert work.ratio(work.cpu) <= 2, (
            f"{name}: the honest rollout's work took {work.cpu[1]:.2f} CPU-s, {work.cpu[0]:.2f} before and {work.cpu[2]:.2f} after"
        )
        assert max(watch.rss_kib) - base.rss_kib[0] <= SLACK_MIB * 1024, (
            f"{name}: the eval process grew by {max(watch.rss_kib) - base.rss_kib[0]} KiB"
        )
        assert max(watch.fds) <= files_limit // 2, (
            f"{name}: the eval process held {max(watch.fds)} of {files_limit} files"
        )
        assert max(watch.files) <= SHARE * host_file_max(), f"{name}: the host's file table held {max(watch.files)}"
