"""Run `vf-eval` on the docker runtime against a model server, and read back what happened.

`vf-eval` exits 0 even when every episode failed, so the outcome comes from `traces.jsonl`
(`arena.traces`): an episode counts as failed unless verifiers stamped it `ok` and its stop
condition is one a finished agent ends with (errors on an ok episode are attempts it retried).
The eval's run id (`VF_RUN_ID`) is the run name, so verifiers labels its containers
`verifiers.run=<run name>` and `arena reap --run` can find them. Each vf-eval runs as a supervised
process group (`arena.supervise`): a deadline or Ctrl-C stops the whole group, SIGTERM then
SIGKILL. Every eval retries infrastructure faults (`arena.retries`), and a request with `resume`
continues its run dir with `vf-eval --resume`: verifiers keeps the episodes that ended ok and runs
the rest, but only under the identical config, so a resumed request must be the same request
(`saved_server_url` tells a caller which model-server address the run was started against).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from arena.vf_hooks import DEFAULT_STARTS, FAIL_CLOSED_SUFFIX, LIVE_HARNESSES, fail_closed
from arena.choices import Harness
from arena.errors import ArenaError, EvalError, PrerequisiteError, UsageError
from arena.retries import retries_table
from arena_kit.records import CONCURRENCY_ENV, RUN_DIR_ENV
from arena.supervise import Exit, Supervised
from arena.traces import Episode, read_traces

__all__ = [
    "VERSIONS_FILE",
    "EvalOutcome",
    "EvalRequest",
    "eval_config",
    "eval_log_path",
    "fail_closed_note",
    "launch_eval",
    "read_outcome",
    "run_eval",
    "run_evals",
    "run_versions",
    "saved_config",
    "saved_server_url",
    "versions_path",
]

API_KEY_VAR = "ARENA_MODEL_KEY"
POLL_S = 0.2
VERSIONS_FILE = "arena-versions.json"
"""What ran a run (package versions, the image), written beside the run dir at launch and copied
into it at the end: vf-eval's `--clean` empties the run dir as it starts."""

CLOCK_SLACK_S = 5.0
"""Docker's clock and ours may differ a little: a container this much older than the launch is still the eval's."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalRequest:
    taskset: str
    """Verifiers taskset id, e.g. `fault-localisation`."""
    harness: Harness
    model: str
    """Model name the server resolves to a policy, e.g. `arena/fault-localisation/oracle`."""
    image: str
    """The docker runtime's image. An Arena environment's tasks name their own (`arena_kit.box.image`), which
    wins: to run one elsewhere, pass `taskset_args={"task": {"image": ...}}`."""
    base_url: str
    """The model server, e.g. `http://127.0.0.1:8765` (without `/v1`)."""
    run_name: str
    output_dir: Path = Path("outputs")
    num_tasks: int | None = None
    max_concurrent: int = 4
    max_turns: int = 40
    select: dict[str, Any] = field(default_factory=dict)
    """verifiers `[select]` keys besides `limit` (e.g. `shuffle`, `seed`, `skip`)."""
    taskset_args: dict[str, Any] = field(default_factory=dict)
    runtime_args: dict[str, Any] = field(default_factory=dict)
    agent_args: dict[str, Any] = field(default_factory=dict)
    """Keys merged into the `[env.agent]` table last (e.g. `timeout`, or a whole `runtime` table
    that replaces the docker one)."""
    harness_args: dict[str, Any] = field(default_factory=dict)
    env_args: dict[str, Any] = field(default_factory=dict)
    """Keys merged into the `[env]` table (e.g. `docker = "stock"` for an env that exports `LeanEnv`)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for vf-eval (e.g. PYTHONPATH for test-only tasksets)."""
    deadline_s: float | None = None
    """Seconds vf-eval may run before its process group is stopped (None: no deadline)."""
    resume: bool = False
    """Continue the run in `run_dir` (`vf-eval --resume`: finished episodes are kept, missing and
    errored ones run) instead of wiping it; a run dir with no saved config starts fresh."""
    retries: dict[str, Any] = field(default_factory=retries_table)
    """The `[env.retries]` table: whole-episode retries of the infrastructure faults (`arena.retries`)."""
    harness_starts: int | None = DEFAULT_STARTS
    """For a harness verifiers starts as a live process (claude_code, codex): at most this many
    start at once (`arena.vf_hooks`); None: no limit."""

    @property
    def run_dir(self) -> Path:
        return self.output_dir / self.run_name


@dataclass(frozen=True)
class EvalOutcome:
    run_dir: Path
    returncode: int
    episodes: list[Episode]
    cpu_s: float | None = None
    """CPU-seconds of vf-eval and every process it reaped (None: not run here)."""
    timed_out: bool = False
    """The request's deadline passed and vf-eval was stopped."""
    wall_s: float | None = None
    """Seconds from launch to exit."""
    skipped: str | None = None
    """Why the last line of `traces.jsonl` was skipped (a run cut short), if it was."""
    reaped: tuple[str, ...] = ()
    """Containers of the run still present when vf-eval ended (a box a daemon restart orphaned),
    which Arena then removed."""
    fail_closed: str | None = None
    """Why the eval ran without the retry rules a box could forge (`arena.vf_hooks.fail_closed`:
    engine-side liveness was not installed), None when it ran with every rule."""

    @property
    def failures(self) -> list[Episode]:
        return [e for e in self.episodes if e.failed]

    @property
    def infra_failures(self) -> list[Episode]:
        """Failures that ended on an infrastructure fault the retries did not outlast (`Episode.infra_fault`)."""
        return [e for e in self.failures if e.infra_fault]

    @property
    def agent_faults(self) -> list[Episode]:
        """Episodes that ended on a fault the agent made of its own box (`Episode.agent_fault`): scored 0, not failures."""
        return [e for e in self.episodes if e.agent_fault]

    @property
    def retries(self) -> int:
        """Rollouts verifiers re-ran after an infrastructure fault, over all episodes."""
        return sum(e.retries for e in self.episodes)

    def raise_for_failures(self) -> None:
        """Raise EvalError naming every failed episode (and the log) if any failed."""
        if self.returncode != 0 or not self.episodes or self.failures:
            lines = [
                f"- {e.task}: ok={e.ok} stop={e.stop_condition}{f' ({e.infra_fault})' if e.infra_fault else ''} errors={[x.get('message', '')[:200] for x in e.errors]}"
                for e in self.failures
            ]
            timeout = " (stopped at its deadline)" if self.timed_out else ""
            raise EvalError(
                f"eval {self.run_dir} failed: vf-eval exit {self.returncode}{timeout}, {len(self.episodes)} episode(s), "
                f"{len(self.failures)} failed\n" + "\n".join(lines) + f"\nlog: {self.run_dir / 'vf-eval.log'}"
            )


def eval_config(request: EvalRequest) -> dict[str, Any]:
    """The vf-eval TOML for a request (push off, docker runtime, our model server)."""
    config: dict[str, Any] = {
        "model": request.model,
        "push": False,
        "output_dir": str(request.output_dir),
        "num_rollouts": 1,
        "max_concurrent": request.max_concurrent,
        "client": {"base_url": request.base_url.rstrip("/") + "/v1", "api_key_var": API_KEY_VAR},
        "run": {"name": request.run_name},
        "env": {
            "taskset": {"id": request.taskset, **request.taskset_args},
            # Whole-episode retries: the one level that also re-rolls a rollout in a box the env
            # lends it (a lean box), which verifiers' per-agent retries never do.
            "retries": request.retries,
            "agent": {
                "max_turns": request.max_turns,
                "harness": {"id": request.harness, **request.harness_args},
                "runtime": {"type": "docker", "image": request.image, **request.runtime_args},
                **request.agent_args,
            },
            **request.env_args,
        },
    }
    select = {**request.select, **({"limit": request.num_tasks} if request.num_tasks is not None else {})}
    if select:
        config["select"] = select
    return config


OnStart = Callable[[EvalRequest, Supervised], None]
OnDone = Callable[[EvalRequest, "EvalOutcome"], None]


def run_eval(request: EvalRequest, progress: Callable[[str], None] = print) -> EvalOutcome:
    """Run vf-eval for `request` to the end and summarise its traces; the log is kept in the run dir."""
    progress(f"vf-eval {request.taskset} · {request.harness} · {request.model} · log {eval_log_path(request)}")
    return run_evals([request], parallel=1)[0]


def run_evals(
    requests: Sequence[EvalRequest],
    parallel: int,
    on_done: OnDone = lambda _r, _o: None,
    on_start: OnStart = lambda _r, _p: None,
    on_tick: Callable[[], None] = lambda: None,
) -> list[EvalOutcome]:
    """Run the requests' vf-evals, `parallel` at a time, and return their outcomes in order.

    `on_start` hears of each process as it starts, `on_done` of each outcome as it ends, `on_tick`
    of every poll (progress). A request past its `deadline_s` is stopped (its outcome says
    `timed_out`). Ctrl-C, a stop signal (SIGTERM, SIGHUP under `arena.supervise.stop_on_signals`) or
    any error starts no more and stops the running ones, which lets each vf-eval tear its
    containers down, removes what they left, and propagates.

    Raises:
        ArenaError: `parallel` is below 1.
        PrerequisiteError: vf-eval is not installed.
    """
    if parallel < 1:
        raise ArenaError(f"parallel must be at least 1, got {parallel}")
    queue = list(enumerate(requests))
    running: dict[int, Supervised] = {}
    outcomes: dict[int, EvalOutcome] = {}
    try:
        while queue or running:
            while queue and len(running) < parallel:
                index, request = queue.pop(0)
                running[index] = launch_eval(request)
                on_start(request, running[index])
            for index, proc in list(running.items()):
                done = proc.poll(requests[index].deadline_s)
                if done is not None:
                    del running[index]
                    outcomes[index] = _finish(requests[index], done, time.monotonic() - proc.started)
                    on_done(requests[index], outcomes[index])
            on_tick()
            if running:
                time.sleep(POLL_S)
    except BaseException:
        # Ctrl-C, a stop signal (arena.supervise.Stopped) or an error: stop what runs, then remove
        # whatever boxes a stopped vf-eval could not tear down in its grace.
        for index, proc in running.items():
            proc.stop()
            _reap_leftovers(requests[index], launched=time.time() - (time.monotonic() - proc.started) - CLOCK_SLACK_S)
        raise
    return [outcomes[i] for i in range(len(requests))]


def launch_eval(request: EvalRequest) -> Supervised:
    """Write the request's TOML and start vf-eval on it in its own process group."""
    vf_eval = shutil.which("vf-eval") or str(Path(sys.executable).with_name("vf-eval"))
    if not Path(vf_eval).exists():
        raise PrerequisiteError("vf-eval not found; install the project (make install) into this Python")
    request.output_dir.mkdir(parents=True, exist_ok=True)
    config_path = request.output_dir / f"{request.run_name}.arena.toml"
    config_path.write_text(tomli_w.dumps(eval_config(request)))
    versions_path(request).write_text(json.dumps(run_versions(request), indent=1))
    fail_closed_note(request).unlink(missing_ok=True)
    env = {
        **os.environ,
        API_KEY_VAR: "arena-local",
        "VF_RUN_ID": request.run_name,
        RUN_DIR_ENV: str(request.run_dir.resolve()),
        CONCURRENCY_ENV: str(request.max_concurrent),
        **request.env,
    }
    # --clean wipes the run dir; --resume needs the config vf-eval saved there on the first launch.
    mode = "--resume" if request.resume and saved_config(request.run_dir) is not None else "--clean"
    args = ["@", str(config_path), "--no-rich", mode]
    python = _hookable_python(Path(vf_eval))
    if python is None:  # not verifiers' own console script (a wrapper): run as it is, without hooks
        logger.warning("%s is not verifiers' vf-eval script: Arena's vf-eval hooks are not installed", vf_eval)
        args = fail_closed(
            args, f"{vf_eval} is not verifiers' vf-eval script, so Arena's vf-eval hooks are not installed"
        )
        return Supervised([vf_eval, *args], eval_log_path(request), env)
    # vf-eval in its own Python, with Arena's hooks (host-side liveness; the start limit for live
    # harnesses) installed before verifiers runs.
    starts = request.harness_starts if request.harness in LIVE_HARNESSES and request.harness_starts is not None else 0
    return Supervised([python, "-m", "arena.vf_hooks", str(starts), *args], eval_log_path(request), env)


def _hookable_python(script: Path) -> str | None:
    """The Python that verifiers' `vf-eval` console script runs under (its `#!` line), or None when
    `script` is not that script (a shell trampoline, a wrapper) and must run as it is."""
    head = script.read_bytes()[:2048]
    first = head.split(b"\n", 1)[0]
    interpreter = first[2:].decode(errors="replace").strip() if first.startswith(b"#!") else ""
    if b"from verifiers.v1.cli.eval.main import main" not in head:
        return None
    if interpreter and Path(interpreter).name.startswith("python") and Path(interpreter).exists():
        return interpreter
    return sys.executable if Path(sys.executable).exists() else None


def saved_config(run_dir: Path) -> dict[str, Any] | None:
    """The resolved config vf-eval saved in `run_dir` when the run started (None: never started).

    Raises:
        UsageError: the saved config is not readable JSON.
    """
    path = run_dir / "configs" / "resolved" / "eval.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text())
    except ValueError as exc:
        raise UsageError(f"cannot resume {run_dir}: {path} is not JSON ({exc}); start a fresh run") from None
    if not isinstance(config, dict):
        raise UsageError(f"cannot resume {run_dir}: {path} holds no config object; start a fresh run")
    return config


def saved_server_url(run_dir: Path) -> str | None:
    """The model server (without `/v1`) a saved run was started against: a resumed request must
    name the same one, since vf-eval resumes only under the identical config."""
    config = saved_config(run_dir)
    url = ((config or {}).get("client") or {}).get("base_url")
    return str(url).removesuffix("/").removesuffix("/v1") if url else None


def versions_path(request: EvalRequest) -> Path:
    """Where the launch writes what ran `request` (`VERSIONS_FILE`, beside the run dir)."""
    return request.output_dir / f"{request.run_name}.{VERSIONS_FILE}"


def run_versions(request: EvalRequest) -> dict[str, str]:
    """The versions of what runs `request`: Python, the platform, the kit, verifiers, the
    environment's distribution (by its `arena.environments` entry point), and the image."""
    from importlib.metadata import PackageNotFoundError, version

    from arena.installed import entry_points

    versions = {"python": sys.version.split()[0], "image": request.image, "harness": request.harness}
    for dist in ("arena-evals", "arena-kit", "verifiers"):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            continue
    for point in entry_points():
        if point.name == request.taskset and point.dist is not None:
            versions[point.dist.name] = point.dist.version
    return versions


def fail_closed_note(request: EvalRequest) -> Path:
    """Where `arena.vf_hooks.fail_closed` says why `request`'s eval dropped its liveness retry rules."""
    return request.output_dir / f"{request.run_name}.arena{FAIL_CLOSED_SUFFIX}"


def eval_log_path(request: EvalRequest) -> Path:
    """Where vf-eval's output for `request` goes (copied into the run dir when it ends)."""
    return request.output_dir / f"{request.run_name}.vf-eval.log"


def _finish(request: EvalRequest, done: Exit, wall_s: float) -> EvalOutcome:
    """Keep the log in the run dir, remove the run's leftover containers and summarise the ended
    eval's traces."""
    if request.run_dir.exists():
        shutil.copy(eval_log_path(request), request.run_dir / "vf-eval.log")
        if versions_path(request).is_file():
            shutil.copy(versions_path(request), request.run_dir / VERSIONS_FILE)
    outcome = read_outcome(request.run_dir, done.returncode)
    note = fail_closed_note(request)
    closed = note.read_text().strip() if note.is_file() else None
    if closed:
        logger.warning("eval %s failed closed: %s", request.run_name, closed)
    return EvalOutcome(
        run_dir=outcome.run_dir,
        returncode=done.returncode,
        episodes=outcome.episodes,
        cpu_s=done.cpu_s,
        timed_out=done.timed_out,
        wall_s=wall_s,
        skipped=outcome.skipped,
        reaped=_reap_leftovers(request, launched=time.time() - wall_s - CLOCK_SLACK_S),
        fail_closed=closed,
    )


def _reap_leftovers(request: EvalRequest, launched: float) -> tuple[str, ...]:
    """Remove the containers this vf-eval left (it tears its own down, but a daemon restart or a
    `docker rm` past its 30 s limit leaves some); only those created since `launched` (epoch s),
    so an earlier run's leftovers stay for `arena reap --run`. Two evals of one run name at once
    share the label and could remove each other's boxes: Arena's run names differ by environment,
    policy, harness and split. An engine that does not answer leaves them to `arena reap --run`."""
    if (request.agent_args.get("runtime") or {}).get("type", "docker") != "docker":
        return ()
    from docker.errors import DockerException  # the Docker SDK only when a docker eval has ended
    from requests.exceptions import RequestException

    from arena.reaper import reap_since

    for attempt in range(2):
        try:
            removed = tuple(reap_since(request.run_name, launched))
            break
        except (ArenaError, DockerException, RequestException) as exc:
            # A daemon that restarted mid-eval can fail the first call on a pooled connection.
            if attempt:
                logger.warning(
                    "could not remove what run %s left (%s); run `arena reap --run %s`",
                    request.run_name,
                    exc,
                    request.run_name,
                )
                return ()
            time.sleep(1.0)
    if removed:
        logger.warning(
            "removed %d container(s) run %s left behind: %s", len(removed), request.run_name, ", ".join(removed)
        )
    return removed


def read_outcome(run_dir: Path, returncode: int = 0) -> EvalOutcome:
    """Summarise `<run_dir>/traces.jsonl` (missing file: no episodes).

    Raises:
        TraceError: the file is corrupt before its last line.
    """
    log = read_traces(run_dir)
    return EvalOutcome(run_dir=run_dir, returncode=returncode, episodes=log.episodes, skipped=log.skipped)
