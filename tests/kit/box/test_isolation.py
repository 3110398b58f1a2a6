"""Isolation by default, attacked from inside real rollouts (taskset tests/support/arena_isolation,
which declares `arena_kit.box.isolation`'s defaults exactly as the real tasksets do and has no rewrite rules):
a memory hog and a fork bomb stay in their box while a concurrent honest rollout scores 1.0; plain
Python egress reaches neither the package registry nor a listener on the host; a hung rollout ends
as a timed-out episode and the eval still finishes. Each attack is released only after the test has
read the limit that contains it off the live container (`docker inspect`).

Every attack runs down both docker paths: the lean one the environments default to (`arena-bash` in a
lean box, every limit set at create time and no `docker update`) and verifiers' stock one (`bash` on
the stock runtime, the PIDs limit set by `docker update`), which users can still select."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import arena.evalrun
from arena.evalrun import EvalOutcome, EvalRequest, run_eval, saved_config
from arena_kit.box.isolation import ISOLATION
from arena_kit.runtimes.lean_docker.box_create import RUNTIME_LABEL
from arena_kit.policy import Action, Answer, Observation, RunShell
from arena.server import start_in_thread
from arena_testkit import SUPPORT
from arena_testkit.rollouts import docker_gateway, tool_results

pytestmark = pytest.mark.docker

MODEL = "arena/isolation"
REGISTRY = "https://pypi.org/simple/"
"""The package registry this machine already uses (as test_network_policy does)."""
EVAL_DEADLINE_S = 420.0
PATHS = {"lean": "arena-bash", "stock": "bash"}
"""`[env] docker` path → the harness that rides it (the lean pair, and the reference pair)."""


def _wait_for_go(role: str) -> str:
    return (
        f"touch /tmp/arena-ready-{role}; for i in $(seq 240); do [ -e /tmp/arena-go ] && break; sleep 0.5; done; "
        "[ -e /tmp/arena-go ] && echo RELEASED || echo NOT-RELEASED"
    )


# A hog that allocates up to twice the memory limit, touching every page; the box's OOM killer stops it.
HOG = (
    "[ -e /tmp/arena-go ] || exit 0; timeout -s KILL 60 python3 -c "
    f"\"b = []\nwhile len(b) < {int(ISOLATION.memory * 2 * 1024)}: b.append(b'x' * (1 << 20))\nprint('HOG-' + 'SURVIVED')\"; "
    "echo HOG-EXIT=$?"
)
# Every process forks as fast as it can for 12 s (so the tree grows exponentially until the PIDs
# limit refuses), then reaps its children and exits: the tree collapses with no zombie left.
BOMB_PY = """
import os, time
end = time.time() + 12
while time.time() < end:
    try:
        pid = os.fork()
    except OSError:
        open('/tmp/bomb-limit-hit', 'w').close()
        time.sleep(0.01)
        continue
    if pid == 0:
        continue
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""
BOMB = (
    "[ -e /tmp/arena-go ] || exit 0; timeout -s KILL 40 python3 - <<'PY'\n" + BOMB_PY + "PY\n"
    "echo BOMB-EXIT=$?; [ -e /tmp/bomb-limit-hit ] && echo BOMB-LIMIT-HIT; echo PIDS-NOW=$(ps -e --no-headers | wc -l)"
)
HONEST = (
    _wait_for_go("honest")
    + "; sleep 8; python3 -c 'print(sum(range(10**6)))'; echo arena-isolation-ok > done.txt; cat done.txt"
)


def _egress_py(gateway_url: str) -> str:
    return f"""python3 - <<'PY'
import json, urllib.request
def attempt(url, proxy):
    opener = urllib.request.build_opener() if proxy else urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    try:
        with opener.open(url, timeout=8) as reply:
            return "OPEN-%d" % reply.status
    except Exception as error:
        return "FAILED-" + type(error).__name__
print("EGRESS=" + json.dumps({{
    "registry-direct": attempt("{REGISTRY}", False), "registry-proxy": attempt("{REGISTRY}", True),
    "gateway-direct": attempt("{gateway_url}", False), "gateway-proxy": attempt("{gateway_url}", True),
}}))
PY"""


def isolation_policy(gateway_url: str = ""):
    """Plays the task's ROLE: honest, attack (hog then bomb), egress, or hang."""

    def policy(obs: Observation) -> Action:
        role = re.search(r"ROLE: (\w+)", obs.prompt)
        script: list[str] = {
            "honest": [HONEST],
            "attack": [
                _wait_for_go("attack")
                + "; echo PIDS-MAX=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)",
                HOG,
                BOMB,
            ],
            "egress": [_egress_py(gateway_url)],
            "hang": ["sleep infinity"],
        }[role.group(1) if role else "honest"]
        step = len(obs.steps)
        return RunShell(script[step]) if step < len(script) else Answer("DONE")

    return policy


@pytest.fixture(params=sorted(PATHS))
def docker_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every eval the test launches takes this `[env] docker` path (an `EvalRequest` cannot name one)."""
    path: str = request.param
    plain = arena.evalrun.eval_config

    def on_path(eval_request: EvalRequest) -> dict[str, Any]:
        config = plain(eval_request)
        config["env"]["docker"] = path
        return config

    monkeypatch.setattr(arena.evalrun, "eval_config", on_path)
    return path


def _took(outcome: EvalOutcome, path: str) -> bool:
    """Whether the eval ran down `path`: the env config vf-eval resolved (and saved) names it."""
    config = saved_config(outcome.run_dir) or {}
    return (
        config.get("env", {}).get("docker"),
        config.get("env", {}).get("agent", {}).get("harness", {}).get("id"),
    ) == (path, PATHS[path])


def _request(
    server_url: str, images: dict[str, str], tmp_path: Path, roles: list[str], run: str, path: str, **kwargs
) -> EvalRequest:
    return EvalRequest(
        taskset="arena-isolation",
        harness=PATHS[path],
        model=MODEL,
        image=images["harness"],
        base_url=server_url,
        run_name=run,
        output_dir=tmp_path,
        max_concurrent=len(roles),
        taskset_args={"roles": roles},
        env={"PYTHONPATH": str(SUPPORT)},
        deadline_s=EVAL_DEADLINE_S,
        **kwargs,
    )


def _docker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _run_containers(run: str) -> list[str]:
    return _docker("ps", "-q", "--filter", f"label=verifiers.run={run}").stdout.split()


def _wait_for_markers(run: str, roles: list[str], deadline_s: float = 240) -> dict[str, str]:
    """role → id of the live container whose rollout reached its wait-for-go step."""
    found: dict[str, str] = {}
    end = time.monotonic() + deadline_s
    while len(found) < len(roles) and time.monotonic() < end:
        for container in _run_containers(run):
            for role in roles:
                if (
                    role not in found
                    and _docker("exec", container, "test", "-e", f"/tmp/arena-ready-{role}").returncode == 0
                ):
                    found[role] = container
        time.sleep(0.5)
    assert len(found) == len(roles), f"rollouts never reached their wait step: found {found}"
    return found


def _inspect(container: str) -> dict:
    return json.loads(_docker("inspect", "--format", "{{json .}}", container).stdout)


def _lacks(host_config: dict, capability: str) -> bool:
    """Whether the box runs without `capability`: dropped by name (stock) or with ALL and not added back (lean)."""
    dropped = {cap.removeprefix("CAP_") for cap in host_config["CapDrop"] or []}
    added = {cap.removeprefix("CAP_") for cap in host_config["CapAdd"] or []}
    return capability not in added and (capability in dropped or "ALL" in dropped)


@contextlib.contextmanager
def _updates(run: str) -> Iterator[Callable[[str], bool]]:
    """Whether the engine reported an `update` of a container of `run` (a `docker update`, as `confine` runs on a
    stock box), from a stream opened before the run: the engine keeps only its last 256 events, which a busy
    shared engine overwrites within seconds, so a later `docker events --since` may miss one."""
    with tempfile.TemporaryFile("w+") as seen:
        stream = subprocess.Popen(
            [
                "docker",
                "events",
                "--filter",
                f"label=verifiers.run={run}",
                "--filter",
                "event=update",
                "--format",
                "{{.Actor.ID}}",
            ],
            stdout=seen,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1)  # the stream is subscribed before the run's first box exists

            def updated(container: str) -> bool:
                seen.seek(0)
                return any(line.startswith(container) for line in seen.read().split())

            yield updated
        finally:
            stream.kill()
            stream.wait()


@contextlib.contextmanager
def _eval_in_thread(request: EvalRequest) -> Iterator[dict[str, EvalOutcome]]:
    box: dict[str, EvalOutcome] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("outcome", run_eval(request, progress=lambda _l: None)), daemon=True
    )
    thread.start()
    try:
        yield box
    finally:
        thread.join(EVAL_DEADLINE_S + 60)
        assert not thread.is_alive(), "the eval outlived its deadline"


def test_a_memory_hog_and_a_fork_bomb_stay_in_their_box_while_an_honest_rollout_scores(images, tmp_path, docker_path):
    run = f"isolation-attack-{docker_path}"
    with _updates(run) as updated, start_in_thread(policies={MODEL: isolation_policy()}) as server:
        with _eval_in_thread(_request(server.url, images, tmp_path, ["attack", "honest"], run, docker_path)) as box:
            containers = _wait_for_markers(run, ["attack", "honest"])
            # The limits are in force on the live attacker box before anything is released.
            inspected = _inspect(containers["attack"])
            config = inspected["HostConfig"]
            assert (inspected["Config"]["Labels"] or {}).get(RUNTIME_LABEL, "stock") == docker_path  # the path taken
            assert config["PidsLimit"] == ISOLATION.pids
            assert config["Memory"] == int(ISOLATION.memory * 1024**3)
            assert config["NanoCpus"] == int(ISOLATION.cpu * 1e9)
            assert _lacks(config, "NET_ADMIN") and _lacks(config, "NET_RAW")
            assert "no-new-privileges" in (config["SecurityOpt"] or [])
            # A lean box carries its PIDs limit from create time (`confine` skips its update); a stock box gets it by update.
            assert updated(containers["attack"]) == (docker_path == "stock")
            for container in containers.values():
                assert _docker("exec", container, "touch", "/tmp/arena-go").returncode == 0
            # The host answers throughout the attack: a process starts, and the engine serves the honest box.
            for _ in range(6):
                subprocess.run(["true"], timeout=10, check=True)
                _docker("exec", containers["honest"], "true", timeout=30)
                time.sleep(2)
    outcome = box["outcome"]
    by_role = {e.task.rsplit("-", 1)[-1]: e for e in outcome.episodes}
    assert not by_role["honest"].failed and by_role["honest"].reward == 1.0
    attack = "\n".join(tool_results(outcome.run_dir))
    assert "RELEASED" in attack and "NOT-RELEASED" not in attack
    assert f"PIDS-MAX={ISOLATION.pids}" in attack
    assert "HOG-EXIT=137" in attack and "HOG-SURVIVED" not in attack  # OOM-killed inside its box
    assert "BOMB-LIMIT-HIT" in attack and "BOMB-EXIT=0" in attack  # refused at the limit, then collapsed
    assert not by_role["attack"].failed, by_role["attack"]  # the contained box still ran the rollout to its end
    assert _run_containers(run) == []


@contextlib.contextmanager
def _gateway_listener() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server the test runs on the docker bridge gateway; yields its URL and the paths it served."""
    served: list[str] = []

    class Recording(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args) -> None:
            pass

    server = http.server.ThreadingHTTPServer((docker_gateway(), 0), Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{docker_gateway()}:{server.server_address[1]}/arena-egress", served
    finally:
        server.shutdown()
        server.server_close()


def test_plain_python_egress_reaches_neither_the_registry_nor_the_host(images, tmp_path, docker_path):
    with _gateway_listener() as (url, served), start_in_thread(policies={MODEL: isolation_policy(url)}) as server:
        # The listener answers from the host itself (so the failures below are the box's, not the listener's).
        assert (
            subprocess.run(
                ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url], capture_output=True, text=True, timeout=10
            ).stdout
            == "200"
        )
        served.clear()
        outcome = run_eval(
            _request(server.url, images, tmp_path, ["egress"], f"isolation-egress-{docker_path}", docker_path),
            progress=lambda _l: None,
        )
    outcome.raise_for_failures()
    assert _took(outcome, docker_path)
    [line] = [m for text in tool_results(outcome.run_dir) for m in re.findall(r"EGRESS=(\{.*\})", text)]
    attempts = json.loads(line)
    assert set(attempts) == {"registry-direct", "registry-proxy", "gateway-direct", "gateway-proxy"}
    assert all(result.startswith("FAILED-") for result in attempts.values()), attempts
    assert served == []


HANG_S = 120
"""The agent's time limit of both rollouts of the hang test: the honest one must reach its hold within it, which
took more than 30 s on a 2-core machine at a load of 125 (both rollouts ended `agent_timeout` with no turn)."""


def test_a_hung_rollout_ends_as_a_timed_out_episode_and_the_eval_finishes(images, tmp_path, docker_path):
    run = f"isolation-hang-{docker_path}"
    with start_in_thread(policies={MODEL: isolation_policy()}) as server:
        request = _request(
            server.url,
            images,
            tmp_path,
            ["hang", "honest"],
            run,
            docker_path,
            agent_args={"timeout": {"rollout": HANG_S}},
        )
        with _eval_in_thread(request) as box:
            containers = _wait_for_markers(run, ["honest"])
            _docker("exec", containers["honest"], "touch", "/tmp/arena-go")
    outcome = box["outcome"]
    assert outcome.returncode == 0 and not outcome.timed_out and _took(outcome, docker_path)
    by_role = {e.task.rsplit("-", 1)[-1]: e for e in outcome.episodes}
    hung = by_role["hang"]
    assert hung.failed and "timeout" in json.dumps([hung.stop_condition, hung.errors]).lower(), hung
    assert not by_role["honest"].failed and by_role["honest"].reward == 1.0
    assert _run_containers(run) == []
