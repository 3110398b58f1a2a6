"""The escape battery (issue 26, item 6): from inside a default box, as the agent user, every way out an
adversary would try is refused, while an honest rollout in another box of the same eval scores 1.0.

Each box is a real rollout of an environment taskset, held at its first shell step: task setup has run and
the harness is live, so the box is exactly what an agent gets (its workdir, the task's files, the harness's
runner, the limits the taskset declares). The test then attacks it with `docker exec` as the agent user
(`arena_testkit.escape_probes`, in the environment the held harness step recorded), one attempt at a time,
and for each first asserts the limit that contains it, read off the live box (the engine's `inspect`, the
cgroup, `/proc/self/status`, `/proc/self/mountinfo`): an attempt whose limit is missing is reported and
never run. Every exec has a hard timeout in the box and on the host. The honest rollout (the
environment's oracle) starts when the battery starts and cannot answer before the battery ends, so the two
overlap by construction.

Boxes: both environments on the lean path (`[env] docker = "lean"`, the default: read-only root, bounded
tmpfs, no network), and on the stock path (verifiers' runtime: a non-root agent, a writable root, so the
disk fill does not apply there).
"""

from __future__ import annotations

import inspect
import json
import pwd
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

import arena_testkit.escape_probes as escape_probes
from arena.evalrun import EvalOutcome, EvalRequest, run_eval
from arena.policies import PolicyResolver, model_name
from arena.server import start_in_thread
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.agent_uids import FIRST_UID, UIDS
from arena_kit.policy import Action, Answer, Observation, Policy, RunShell
from arena_testkit.rollouts import tool_results
from arena_testkit.box_watch import (
    cpu_usage_ns,
    docker,
    docker_inspect,
    host_cgroup,
    host_get,
    in_thread,
    listeners,
    size_kib,
    size_rw,
    throttled,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

MODEL = "arena/escape-battery"
HARNESS = "arena-bash"
EVAL_DEADLINE_S = 300.0
HOLD_S = 240
"""How long a held rollout waits for the test to release it (it is always released sooner)."""
PROBES = Path(escape_probes.__file__).read_text()
AGENT_RECORD = escape_probes.AGENT_RECORD
BOXES = [
    pytest.param("lean", "schema-migration", id="lean-schema-migration"),
    pytest.param("lean", "fault-localisation", id="lean-fault-localisation"),
    pytest.param("stock", "schema-migration", id="stock-schema-migration"),
    pytest.param("stock", "fault-localisation", id="stock-fault-localisation"),
]
CAP = {"KILL": 5, "SYS_MODULE": 16, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "SYS_RESOURCE": 24, "MKNOD": 27}
"""Capability bits (linux/capability.h) the attempts need."""
PSEUDO_FS = ("proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2")
HARNESS_FILES = (
    "/var/tmp/vf-*",
    "/var/tmp/vf-*/*",
    "/var/tmp/vf-node/bin/*",
    "/opt/vf-scripts*",
    "/opt/vf-scripts*/*",
    "/opt/vf-uv",
    "/opt/vf-uv/*",
    "/tmp/vf-scripts*",
    "/tmp/vf-scripts*/*",
)
"""The harness's install (node, the ACP packages), its runner scripts and their synced envs, baked and restored."""
STOCK_AGENT_RUN = ("/tmp/vf-scripts-agent", "/opt/vf-uv")
"""On the stock path verifiers itself writes the agent's runner scripts and `uv sync`s their envs as the agent
(its per-user script dir, and the uv cache the image synced them into): the agent's there, by design
(README isolation table), and left out of the stock box's harness files. The lean box holds them read-only."""
IMAGE_FILES = (
    "/",
    "/usr/bin",
    "/usr/bin/python3.*",
    "/usr/bin/bash",
    "/usr/bin/sleep",
    "/usr/local/bin",
    "/usr/local/bin/uv",
    "/usr/lib/python3",
    "/etc",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/root",
    "/opt",
)


def _hold(role: str, record: bool) -> str:
    """A shell step that marks `role` ready and waits (forking nothing: a fork bomb next to it cannot
    break the wait) until the test touches /tmp/arena-go-<role>; the battery's also records the agent
    (its environment, uid and ancestors up to the harness)."""
    return f"""python3 - <<'PY'
import json, os, pathlib, time
if {record!r}:
    chain, pid = [], os.getpid()
    while pid > 1:
        status = dict(line.split(":", 1) for line in open(f"/proc/{{pid}}/status") if ":" in line)
        argv = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
        chain.append({{"pid": pid, "uid": int(status["Uid"].split()[0]), "argv": [a.decode(errors="replace") for a in argv if a]}})
        pid = int(status["PPid"])
    json.dump({{"env": dict(os.environ), "uid": os.getuid(), "chain": chain}}, open("{AGENT_RECORD}", "w"))
pathlib.Path("/tmp/arena-ready-{role}").touch()
end = time.time() + {HOLD_S}
while time.time() < end and not os.path.exists("/tmp/arena-go-{role}"):
    time.sleep(0.5)
print(("RELEASED-" if os.path.exists("/tmp/arena-go-{role}") else "NOT-RELEASED-") + "{role}")
PY"""


HOLD_BATTERY = _hold("battery", record=True)
HOLD_HONEST = _hold("honest", record=False)
HOLD_DONE = _hold("done", record=False)


class EscapePolicy:
    """The eval's two tasks: the first conversation is the battery's (held at its first step, then done),
    the second the honest one (the environment's oracle, started by the battery's start and kept from its
    final answer until the battery has ended)."""

    def __init__(self, oracle: Policy) -> None:
        self.oracle = oracle
        self.roles: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, obs: Observation) -> Action:
        with self.lock:
            role = self.roles.setdefault(obs.prompt, "honest" if "battery" in self.roles.values() else "battery")
        steps = obs.steps
        if role == "battery":
            return RunShell(HOLD_BATTERY) if not steps else Answer("DONE")
        if not steps:
            return RunShell(HOLD_HONEST)
        if steps[-1].action == RunShell(HOLD_DONE):
            return self.oracle(replace(obs, steps=steps[1:-1]))
        action = self.oracle(replace(obs, steps=steps[1:]))
        return RunShell(HOLD_DONE) if isinstance(action, Answer) else action


class LimitMissing(AssertionError):
    """The limit that should contain an attempt is not in force: the attempt is not run."""


class NotRefused(AssertionError):
    """The box let the attempt through."""


@dataclass
class Box:
    """The battery's live box, attacked as the agent user."""

    container: str
    path: str
    env: str
    honest: str
    """The honest rollout's container (it must keep answering while this box is attacked)."""
    inspected: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    user: str = ISOLATION.agent_user
    """The agent as `docker exec -u` takes it: its box's own uid and gid (the engine resolves a name from the image's files)."""
    agent_uid: int = ISOLATION.agent_uid
    """The uid the box's agent runs as: the box's own (`arena_kit.runtimes.agent_uids`)."""
    agent_named: bool = False
    """The box's user database names its agent user (by that uid)."""
    listeners: list[tuple[str, list[str]]] = field(default_factory=list)

    def probe(self, name: str, *args: str, timeout: int = 30) -> Any:
        """Run one probe as the agent user (a hard `timeout -s KILL` in the box, and on the host)."""
        done = docker(
            "exec",
            "-i",
            "-u",
            self.user,
            "-w",
            self.workdir,
            self.container,
            "timeout",
            "-s",
            "KILL",
            str(timeout),
            "python3",
            "-",
            name,
            *args,
            timeout=timeout + 20,
            stdin=PROBES,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise AssertionError(f"probe {name} exited {done.returncode}: {done.stderr.strip()[-500:]}")
        return json.loads(lines[-1])

    @property
    def workdir(self) -> str:
        return str(self.inspected["Config"]["WorkingDir"] or "/")

    @property
    def lean(self) -> bool:
        return self.path == "lean"

    def limit(self, held: bool, missing: str) -> None:
        if not held:
            raise LimitMissing(missing)

    def refused(self, held: bool, let_through: str) -> None:
        if not held:
            raise NotRefused(let_through)

    def mount_of(self, path: str) -> dict[str, Any]:
        """The mount `path` lives on: the longest mount point that prefixes it (the last mounted, if stacked)."""
        best: dict[str, Any] = {}
        for mount in self.facts["mounts"]:
            point = mount["point"]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best.get("point", "")):
                best = mount
        return best

    def read_only(self, path: str) -> bool:
        return "ro" in self.mount_of(path).get("opts", [])

    def unprivileged(self) -> None:
        """The limit most attempts rest on: the agent is not root and holds no capability."""
        facts = self.facts
        self.limit(
            facts["uid"] == facts["euid"] == self.agent_uid,
            f"the agent runs as uid {facts['uid']}, not {self.agent_uid}",
        )
        self.limit(
            facts["cap_eff"] == 0 and facts["cap_prm"] == 0,
            f"the agent holds capabilities (CapEff {facts['cap_eff']:#x})",
        )

    def lacks(self, capability: str) -> None:
        """Neither held nor obtainable: not in the effective set, nor in the bounding set any exec'd binary could reach."""
        bit = 1 << CAP[capability]
        self.limit(not self.facts["cap_eff"] & bit, f"CAP_{capability} is in the agent's effective set")
        self.limit(
            not self.facts["cap_bnd"] & bit or self.facts["no_new_privs"] == "1",
            f"CAP_{capability} is in the bounding set and no-new-privileges is off",
        )

    def not_the_agents(self, paths: dict[str, list[Any]]) -> None:
        """Each path is on a read-only mount, or belongs to someone else and is not group/other-writable."""
        open_to_agent = [
            p
            for p, (uid, mode, _) in paths.items()
            if not self.read_only(p) and (uid == self.agent_uid or mode & 0o022)
        ]
        self.limit(not open_to_agent, f"the agent owns or may write: {open_to_agent[:12]}")


def _none_ok(outcomes: dict[str, Any]) -> list[str]:
    """The operations that succeeded, anywhere in a probe's answer."""
    succeeded = []
    for key, value in outcomes.items():
        if isinstance(value, dict):
            succeeded += [f"{key}: {op}" for op, result in value.items() if result == "ok"]
        elif value == "ok" or (isinstance(value, str) and value.startswith("connected")):
            succeeded.append(f"{key}: {value}")
    return succeeded


# --- the attempts: each asserts its limit, then that the box refuses ---------------------------------------
# An attempt that is a generator yields its probe calls (`(probe, *args)`) and gets their answers back: the
# battery runs the pending calls of every such attempt in one exec (`escape_probes.batch`), round by round.
# The others (the network, the disk, the PIDs and the CPU) run alone, with the host watching.

Probing = Generator[tuple[str, ...], Any, str]


def write_image_files(box: Box) -> Probing:
    box.unprivileged()
    box.not_the_agents((yield ("owners", *IMAGE_FILES)))
    if box.lean:
        box.limit(
            box.read_only("/") and box.inspected["HostConfig"]["ReadonlyRootfs"], "the root filesystem is writable"
        )
    through = _none_ok((yield ("writes", *IMAGE_FILES)))
    box.refused(not through, f"the agent wrote image files: {through}")
    return f"{len(IMAGE_FILES)} paths refused"


def write_harness_files(box: Box) -> Probing:
    box.unprivileged()
    runner = [a for hop in box.record["chain"] for a in hop["argv"] if a.endswith(".py") and "/vf-" in a]
    owned = yield ("owners", *HARNESS_FILES, *runner)
    box.limit(
        bool(runner) and any(p.startswith("/var/tmp/vf-node") for p in owned),
        f"no harness runner or node install found ({runner})",
    )
    kept = {} if box.lean else {p: v for p, v in owned.items() if p.startswith(STOCK_AGENT_RUN)}
    owned = {p: v for p, v in owned.items() if p not in kept}
    box.not_the_agents(owned)
    through = _none_ok((yield ("writes", *owned)))
    box.refused(not through, f"the agent wrote harness files: {through[:12]}")
    stock = (
        f"; the agent's as verifiers syncs them (stock): {len(kept)} under {', '.join(STOCK_AGENT_RUN)}" if kept else ""
    )
    return f"{len(owned)} harness paths refused, runner {runner[0]}{stock}"


def raise_pid1_oom_score(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("SYS_RESOURCE")
    box.limit(box.facts["pid1_uid"] != box.agent_uid, "PID 1 belongs to the agent")
    seen = yield ("oom_pid1",)
    box.refused(seen["write"] != "ok" and seen["after"] == seen["before"], f"PID 1's oom_score_adj was raised: {seen}")
    return f"{seen['before']}→{seen['tried']}: {seen['write']}"


def signal_pid1(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("KILL")
    box.limit(box.facts["pid1_uid"] != box.agent_uid, "PID 1 belongs to the agent")
    pid = box.inspected["State"]["Pid"]
    seen = yield ("signal_pid1",)
    state = docker_inspect(box.container)["State"]
    box.refused(not _none_ok(seen), f"PID 1 accepted signals: {seen}")
    box.refused(state["Running"] and state["Pid"] == pid, f"PID 1 changed: {state}")
    return ", ".join(f"{k} {v}" for k, v in seen.items())


def ptrace_pid1(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("SYS_PTRACE")
    box.limit(box.facts["pid1_uid"] != box.agent_uid, "PID 1 belongs to the agent")
    seen = yield ("ptrace_pid1",)
    box.refused(not _none_ok(seen), f"PID 1 could be traced or read: {seen}")
    return ", ".join(f"{k} {v}" for k, v in seen.items())


def mount(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("SYS_ADMIN")
    box.limit(
        box.facts["seccomp"] == "2" and box.facts["no_new_privs"] == "1",
        f"seccomp {box.facts['seccomp']}, no_new_privs {box.facts['no_new_privs']}",
    )
    seen = yield ("mounts",)
    calls = {seen[k] for k in ("mount-tmpfs", "bind-root", "unshare-user", "unshare-mount")}
    box.refused(
        calls == {"EPERM"} and not _none_ok(seen) and not seen["mounted-after"],
        f"a mount or namespace went through: {seen}",
    )
    return ", ".join(f"{k} {v}" for k, v in seen.items() if k != "mounted-after")


def load_kernel_module(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("SYS_MODULE")
    seen = yield ("module",)
    # Any answer but EPERM means the permission check passed (a bad image only then fails to load).
    box.refused(set(seen.values()) == {"EPERM"}, f"the kernel considered a module call: {seen}")
    return ", ".join(f"{k} {v}" for k, v in seen.items())


def write_proc_sys(box: Box) -> Probing:
    box.unprivileged()
    box.limit(box.read_only("/proc/sys"), "/proc/sys is mounted writable")
    trigger = yield ("owners", "/proc/sysrq-trigger")
    box.not_the_agents(trigger)
    seen = yield ("proc_sys",)
    box.refused(not _none_ok(seen), f"/proc/sys took a write: {seen}")
    return ", ".join(f"{k.removeprefix('/proc/')} {v}" for k, v in seen.items())


def write_cgroup_tree(box: Box) -> Probing:
    box.unprivileged()
    cgroups = [
        m
        for m in box.facts["mounts"]
        if m["point"].startswith("/sys/fs/cgroup") and m["fstype"] in ("cgroup", "cgroup2")
    ]
    box.limit(
        bool(cgroups) and all("ro" in m["opts"] for m in cgroups),
        f"a cgroup mount is writable: {[m['point'] for m in cgroups if 'ro' not in m['opts']]}",
    )
    box.not_the_agents((yield ("owners", "/sys/fs/cgroup")))
    seen = yield ("cgroup_tree",)
    box.refused(not _none_ok(seen), f"the cgroup tree took a write: {_none_ok(seen)}")
    return f"{len(seen)} writes refused ({sorted(set(seen.values()))})"


def mknod_device(box: Box) -> Probing:
    box.unprivileged()
    box.lacks("MKNOD")
    seen = yield ("mknod",)
    box.refused(not _none_ok(seen), f"a device node was made: {seen}")
    return f"{len(seen)} refused ({sorted(set(seen.values()))})"


def reach_engine_socket(box: Box) -> Probing:
    mounts = box.inspected["Mounts"] or []
    box.limit(
        not any(
            "docker" in (m.get("Source") or "") + (m.get("Destination") or "")
            or (m.get("Source") or "").endswith(".sock")
            for m in mounts
        ),
        f"the engine's files are mounted in: {mounts}",
    )
    seen = yield ("engine_socket",)
    box.refused(not _none_ok(seen), f"a socket answered: {_none_ok(seen)}")
    return ", ".join(f"{k} {v}" for k, v in seen.items())


def reach_host_network(box: Box) -> str:
    host = box.inspected["HostConfig"]
    if box.lean:
        box.limit(host["NetworkMode"] == "none", f"the lean box has a network: {host['NetworkMode']}")
    else:  # stock: verifiers' restricted network, which an agent without NET_ADMIN/NET_RAW cannot lift
        dropped = {c.removeprefix("CAP_") for c in host["CapDrop"] or []}
        box.limit(
            {"NET_ADMIN", "NET_RAW"} <= dropped or "ALL" in dropped, f"the stock box keeps NET_ADMIN/NET_RAW: {dropped}"
        )
    targets = []
    for url, served in box.listeners:
        box.limit(host_get(url) == 200, f"the test's listener {url} does not answer on the host")
        served.clear()
        targets.append(url.removeprefix("http://").split("/", 1)[0])
    seen = box.probe("network", *targets, timeout=60)
    served = [p for _, s in box.listeners for p in s]
    box.refused(not _none_ok(seen) and not served, f"the host was reached: {_none_ok(seen)}; listener served {served}")
    return ", ".join(f"{k} {v}" for k, v in seen.items())


def fill_disk(box: Box) -> str:
    memory = int(ISOLATION.memory * 1024**3)
    box.limit(box.inspected["HostConfig"]["ReadonlyRootfs"] and box.read_only("/"), "the root filesystem is writable")
    box.limit(box.inspected["HostConfig"]["Memory"] == memory, "the box has no memory limit to count its tmpfs against")
    declared = ISOLATION.writable(box.workdir, ISOLATION.agent_user)
    sizes: dict[str, int] = {}
    for point, options in declared.items():
        mount = box.mount_of(point)
        size = size_kib(mount.get("super", []))
        box.limit(
            mount.get("point") == point and mount.get("fstype") == "tmpfs" and size == size_kib(options.split(",")),
            f"{point} is not the declared tmpfs ({options}): {mount}",
        )
        sizes[point] = size
    rw = [m["point"] for m in box.facts["mounts"] if "rw" in m["opts"] and m["fstype"] not in PSEUDO_FS]
    writable = [p for p, ops in box.probe("writes", *rw).items() if ops.get("create") == "ok"]
    for point in writable:
        mount = box.mount_of(point)
        size = size_kib(mount["super"])
        box.limit(
            mount["fstype"] == "tmpfs" and size > 0,
            f"the agent may write {point}, which is not a bounded tmpfs: {mount}",
        )
        sizes[point] = size
    box.limit(
        sum(sizes.values()) * 1024 <= memory, f"the writable space ({sum(sizes.values())} KiB) exceeds the box's memory"
    )
    before = size_rw(box.container)
    for point, size in sizes.items():
        seen = box.probe("fill", point, timeout=60)
        box.refused(
            seen["error"] == "ENOSPC" and seen["written"] <= size * 1024,
            f"filling {point} (size {size} KiB) ended with {seen}",
        )
    after = size_rw(box.container)
    box.refused(after - before < 1 << 20, f"the box's layer on the host disk grew by {after - before} bytes")
    return f"ENOSPC at {', '.join(f'{p} {s // 1024} MiB' for p, s in sizes.items())}; host layer +{after - before} B"


def fork_bomb(box: Box) -> str:
    host = box.inspected["HostConfig"]
    box.limit(
        host["PidsLimit"] == ISOLATION.pids and box.facts["pids_max"] == str(ISOLATION.pids),
        f"PIDs limit: engine {host['PidsLimit']}, cgroup {box.facts['pids_max']}, declared {ISOLATION.pids}",
    )
    pids_current = host_cgroup(box.container, "pids", "pids.current")
    peak, host_ok, honest_ok = 0, [], []
    with in_thread(lambda: box.probe("bomb", "45", timeout=75)) as result:
        while not result:
            peak = max(peak, int(pids_current.read_text()))
            host_ok.append(subprocess.run(["true"], timeout=10).returncode == 0)
            honest_ok.append(docker("exec", box.honest, "true", timeout=30).returncode == 0)
            time.sleep(0.2)
    seen = result["value"]
    box.refused(seen["limit_hit"] and peak <= ISOLATION.pids, f"the bomb never met the limit: {seen}, peak {peak}")
    box.refused(
        all(host_ok) and all(honest_ok), f"the host or the honest box stopped answering: {host_ok}, {honest_ok}"
    )
    return f"fork refused at the limit after {seen['seconds']} s; peak {peak}/{ISOLATION.pids} PIDs; host and honest box answered {len(host_ok)}×"


def hold_cpu(box: Box) -> str:
    quota, period = (box.facts["cpu_max"] or "").split()
    box.limit(quota not in ("max", "-1") and int(quota) / int(period) == ISOLATION.cpu, f"cpu quota {quota}/{period}")
    box.limit(box.inspected["HostConfig"]["NanoCpus"] == int(ISOLATION.cpu * 1e9), "the engine sets no CPU limit")
    usage, periods = cpu_usage_ns(box.container), throttled(box.container)
    with in_thread(lambda: box.probe("spin", "4", "6", timeout=40)) as result:
        time.sleep(1.5)  # the spinners are up
        start_usage, start_periods, start = usage(), periods(), time.monotonic()
        time.sleep(3.5)
        cores = (usage() - start_usage) / ((time.monotonic() - start) * 1e9)
        more_throttled = periods() - start_periods
    box.refused(result["value"]["spun"] == 4, f"the spinners did not run: {result}")
    box.refused(cores <= ISOLATION.cpu * 1.1, f"4 spinners used {cores:.2f} cores (throttled {more_throttled}×)")
    # Throttling shows the quota at work; a host that gives the box no more than its quota (other work on
    # the other core) never throttles it, so throttling is reported, not required: the bound above is the claim.
    saturated = "" if more_throttled else " (the host gave it no more than its quota)"
    return f"4 spinners held {cores:.2f} cores, throttled in {more_throttled} periods{saturated}"


def gain_root_through_setuid(box: Box) -> str:
    box.unprivileged()
    box.limit(box.facts["no_new_privs"] == "1", "no-new-privileges is off")
    special = box.facts["setuid_files"]
    box.refused(not special, f"setuid/setgid binaries on the root filesystem: {special}")
    return "no setuid/setgid file"


Attempt = Callable[[Box], str]
BOTH = ("lean", "stock")
ATTEMPTS: list[tuple[Attempt, tuple[str, ...]]] = [
    (write_image_files, BOTH),
    (write_harness_files, BOTH),
    (gain_root_through_setuid, BOTH),
    (raise_pid1_oom_score, BOTH),
    (signal_pid1, BOTH),
    (ptrace_pid1, BOTH),
    (mount, BOTH),
    (load_kernel_module, BOTH),
    (write_proc_sys, BOTH),
    (write_cgroup_tree, BOTH),
    (mknod_device, BOTH),
    (reach_engine_socket, BOTH),
    (reach_host_network, BOTH),
    (fill_disk, ("lean",)),
    (fork_bomb, BOTH),
    (hold_cpu, BOTH),
]
"""Each attempt and the docker paths it applies to (the stock root stays writable: no disk bound to test there)."""
HEAVY = (fill_disk, fork_bomb, hold_cpu)
"""Attempts on the box's resources, which every environment's box shares on a path (`ISOLATION`): run on
one environment per path (`HEAVY_ON`), to keep the module's wall time down."""
HEAVY_ON = "schema-migration"


def _containers(run: str) -> list[str]:
    return docker("ps", "-q", "--filter", f"label=verifiers.run={run}").stdout.split()


def _held(run: str, roles: tuple[str, ...], eval_result: dict[str, Any], deadline_s: float = 180) -> dict[str, str]:
    """role → the live container whose rollout reached its held step (fails as soon as the eval has ended)."""
    found: dict[str, str] = {}
    end = time.monotonic() + deadline_s
    while len(found) < len(roles) and time.monotonic() < end:
        if eval_result:
            outcome = eval_result.get("value")
            raise AssertionError(
                f"the eval ended before its rollouts were held: {outcome.episodes if outcome else eval_result}"
            )
        for container in _containers(run):
            for role in roles:
                if (
                    role not in found
                    and docker("exec", container, "test", "-e", f"/tmp/arena-ready-{role}").returncode == 0
                ):
                    found[role] = container
        time.sleep(0.5)
    assert len(found) == len(roles), f"the rollouts never reached their held steps: found {found}"
    return found


def _agent_uid(container: str) -> int | None:
    """The uid the box names its agent user by (the box's own); None if it names none (the identity row fails)."""
    found = docker("exec", container, "id", "-u", ISOLATION.agent_user)
    return int(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip().isdigit() else None


def _identity(box: Box) -> list[str]:
    """What makes the box's agent the agent: the harness and its shell run as the unprivileged user."""
    problems = []
    harness = [hop for hop in box.record["chain"] if any("/vf-" in a for a in hop["argv"])]
    if not FIRST_UID <= box.agent_uid < FIRST_UID + UIDS or _host_user(box.agent_uid):
        problems.append(f"the agent's uid {box.agent_uid} is not one of its box's own (a host user, or the image's)")
    if box.record["uid"] != box.agent_uid or not harness or any(hop["uid"] != box.agent_uid for hop in harness):
        problems.append(
            f"the harness runs as uid {[hop['uid'] for hop in harness] or '?'}, its shell as {box.record['uid']}"
        )
    if not box.agent_named:
        problems.append(f"the box has no user {ISOLATION.agent_user!r}")
    home = box.probe("owners", ISOLATION.agent_home, box.workdir, f"{box.workdir}/db.sqlite")
    owned = [
        p
        for p in (ISOLATION.agent_home, box.workdir, f"{box.workdir}/db.sqlite")
        if p in home and home[p][0] == box.agent_uid
    ]
    expected = 3 if box.env == "schema-migration" else 2
    if len(owned) != expected:
        problems.append(f"the agent owns only {owned} of its home, workdir and task files ({home})")
    return problems


def _host_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


Row = tuple[str, str, str, float]
"""attempt, outcome (refused, held, LIMIT MISSING, NOT REFUSED), what was seen, seconds since its phase began
(the batched attempts share one clock)."""


def _battery(box: Box) -> list[Row]:
    """Every attempt that applies to the box, in `ATTEMPTS` order; one whose limit is missing is not run."""
    rows: dict[str, Row] = {}
    pending: dict[str, tuple[Probing, tuple[str, ...]]] = {}

    def settle(name: str, start: float, step: Callable[[], Any], gen: Probing | None = None) -> None:
        try:
            value = step()
        except StopIteration as finished:
            outcome, detail = "refused", str(finished.value)
        except LimitMissing as missing:
            outcome, detail = "LIMIT MISSING", str(missing)
        except NotRefused as through:
            outcome, detail = "NOT REFUSED", str(through)
        else:
            if gen is not None:
                pending[name] = (gen, value)
                return
            outcome, detail = "refused", value
        rows[name] = (name, outcome, detail, time.monotonic() - start)

    start = time.monotonic()
    chosen = [a for a, paths in ATTEMPTS if box.path in paths and (a not in HEAVY or box.env == HEAVY_ON)]
    for attempt in chosen:
        if inspect.isgeneratorfunction(attempt):
            gen = attempt(box)
            settle(attempt.__name__, start, lambda g=gen: next(g), gen)
    while pending:
        calls = list(pending.items())
        pending.clear()
        answers = box.probe("batch", json.dumps([call for _, (_, call) in calls]), timeout=120)
        for (name, (gen, call)), answer in zip(calls, answers, strict=True):
            assert "error" not in answer, f"probe {call[0]} of {name} crashed: {answer['error']}"
            settle(name, start, lambda g=gen, a=answer: g.send(a["value"]), gen)
    for attempt in chosen:
        if not inspect.isgeneratorfunction(attempt):
            settle(attempt.__name__, time.monotonic(), lambda a=attempt: a(box))
    return [rows[a.__name__] for a in chosen]


@pytest.mark.parametrize(("path", "env"), BOXES)
def test_the_box_refuses_every_escape_while_an_honest_rollout_scores_one(path, env, images, tmp_path):
    run = f"escape-{path}-{env}-{uuid.uuid4().hex[:6]}"
    policy = EscapePolicy(PolicyResolver().resolve(model_name(env, "oracle")))
    request = EvalRequest(
        taskset=env,
        harness=HARNESS,
        model=MODEL,
        image=images[env],
        base_url="",
        run_name=run,
        output_dir=tmp_path,
        num_tasks=2,
        max_concurrent=2,
        taskset_args={"split": "dev"},
        env_args={"docker": path},
        deadline_s=EVAL_DEADLINE_S,
    )
    rows: list[Row] = []
    held: dict[str, str] = {}
    with listeners() as host_listeners, start_in_thread(policies={MODEL: policy}) as server:
        with in_thread(lambda: run_eval(replace(request, base_url=server.url), progress=lambda _l: None)) as done:
            try:
                held.update(_held(run, ("battery", "honest"), done))
                box = Box(
                    held["battery"],
                    path,
                    env,
                    held["honest"],
                    docker_inspect(held["battery"]),
                    listeners=host_listeners,
                )
                named = _agent_uid(box.container)
                box.agent_named, box.agent_uid = named is not None, ISOLATION.agent_uid if named is None else named
                box.user = f"{box.agent_uid}:{box.agent_uid}"
                box.record = json.loads(docker("exec", box.container, "cat", AGENT_RECORD).stdout)
                box.facts = box.probe("facts")
                assert (box.inspected["Config"]["Labels"] or {}).get("arena.runtime", "stock") == path  # the path taken
                problems = _identity(box)
                rows += [("agent-identity", "LIMIT MISSING", p, 0.0) for p in problems] or [
                    ("agent-identity", "held", f"uid {box.agent_uid}", 0.0)
                ]
                assert (
                    docker("exec", box.honest, "touch", "/tmp/arena-go-honest").returncode == 0
                )  # the honest rollout starts
                rows += _battery(box)
            finally:
                for container, marker in ((held.get("battery"), "battery"), (held.get("honest"), "done")):
                    if container:
                        docker("exec", container, "touch", f"/tmp/arena-go-{marker}")
    outcome: EvalOutcome = done["value"]
    table = "\n".join(f"{name:26} {status:14} {seconds:5.1f} s  {detail}" for name, status, detail, seconds in rows)
    print(f"\nescape battery, {path} path, {env}:\n{table}")
    by_role = {
        ("battery" if any("RELEASED-battery" in r for r in _results(outcome, e)) else "honest"): e
        for e in outcome.episodes
    }
    honest = by_role.get("honest")
    assert honest is not None and not honest.failed and honest.reward == 1.0, (honest, outcome.run_dir)
    released = "\n".join(_results(outcome, honest))
    assert (
        "RELEASED-honest" in released and "RELEASED-done" in released and "NOT-RELEASED" not in released
    )  # it spanned the battery
    assert not by_role["battery"].failed, by_role["battery"]  # the attacked box still ran its rollout to the end
    assert _containers(run) == []
    assert all(status in ("refused", "held") for _, status, _, _ in rows), f"the box let something through:\n{table}"


def _results(outcome: EvalOutcome, episode: Any) -> list[str]:
    """The tool results of one episode (the run's traces, matched by the episode's box)."""
    return tool_results(outcome.run_dir, episode.runtime_id)
