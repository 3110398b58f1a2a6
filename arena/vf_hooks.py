"""Hooks Arena installs in its vf-eval processes, on verifiers 0.4.0 only: harness-start admission
and host-side box liveness (and, before them, the start-up cuts of `arena.vf_startup`).

**Admission.** verifiers starts the ACP harnesses (claude_code, codex) as live processes in the box
(`ContainerRuntime.open_process`), and gives each a fixed 5 s (30 s on a nested host) to report its
PID, polling with one `docker exec` every 50 ms. At 32 rollouts the starts come in one burst; their
handshakes and polls queue on the engine and some miss the deadline ("container live process failed
to start"), which ends the rollout. No config knob bounds this on docker (`runtimes/limiters.py`
paces only the remote runtimes' sandbox creation, `max_concurrent` bounds whole episodes), so
`open_process` goes behind a semaphore: at most `limit` handshakes run at once, and the wait for
admission is outside the 5 s.

**Liveness.** When a harness exits non-zero, verifiers asks `runtime.alive()` whether the box died
(then the error is "runtime died under harness", an infrastructure fault Arena retries) or the
harness failed (a `HarnessError`, the agent's outcome). verifiers answers by running `true` inside
the box, which a root agent can replace with `exit 1` to pass its own failure off as a dead box and
get the rollout re-run. For docker/podman boxes the hook asks the engine instead (`inspect`: is the
container running?), which nothing in the box can shape. A failed in-box read or write (whose error
quotes the box's own stderr, e.g. a replaced `cat` printing "No such container") is checked the same
way: in a box the engine reports running it becomes "in the running box: ...", which no retry rule
(`arena.retries`) matches.

**Agent faults.** A harness turn that failed in a docker/podman box is asked of the engine too: an
OOM kill in the box's memory cgroup, or a runner killed by a signal in a box that still runs, is the
agent's doing (`arena_kit.box.faults`; the types in `arena_kit.errors`: `BoxOomError`, `AgentKilledBoxError`), scored 0 and never retried.

**One listing client.** verifiers' interception server opens a new HTTP client (a new TLS context)
for every `/v1/models` a harness asks; it relays them through one per server instead
(`arena_kit.verifiers_seam.interception`).

**Exit.** A finished run leaves without the interpreter's teardown of vf-eval's modules and objects,
0.6 CPU-s per run, after its threads are joined, its atexit callbacks run and its files flushed
(`arena.vf_exit`).

**Fail closed.** On another verifiers version no hook is installed (with a warning): the code they
wrap may have moved. Without engine-side liveness, the retry rules a box could forge
(`arena.retries.LIVENESS_FAULTS`) are dropped from the eval's config before vf-eval reads it, and
`<run>.arena.fail-closed.txt` beside the config says so (`arena.evalrun` reports it). The patches themselves live in `arena_kit.verifiers_seam.container_hooks`. Usage (what `arena.evalrun` launches): `python -m arena.vf_hooks LIMIT <vf-eval
arguments>`, LIMIT 0 for no start limit.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from arena_kit.verifiers_seam import VERIFIERS_VERSION, pinned
from arena import vf_exit
from arena.vf_startup import fast_server_polls, hand_over_tool_server, lighten_imports, prewarm

__all__ = [
    "DEFAULT_STARTS",
    "FAIL_CLOSED_SUFFIX",
    "LIVE_HARNESSES",
    "fail_closed",
    "install",
    "install_agent_faults",
    "install_host_liveness",
    "install_models_client",
    "main",
]

LIVE_HARNESSES = frozenset({"claude_code", "codex", "arena-codex"})
"""Harnesses verifiers starts as a live process in the box (the ones the deadline can hit)."""
FAIL_CLOSED_SUFFIX = ".fail-closed.txt"
"""Beside an eval's config `<run>.arena.toml`: `<run>.arena.fail-closed.txt`, why its liveness rules were dropped."""
DEFAULT_STARTS = 4
"""Handshakes at once by default: c=32 lost 3 of 64 claude_code/codex rollouts without a limit."""

logger = logging.getLogger(__name__)


def _hookable() -> bool:
    if not pinned():
        logger.warning(
            "verifiers is not %s: Arena's vf-eval hooks (harness-start limit, host-side liveness) are "
            "not installed; check arena_kit.verifiers_seam.container_hooks against it",
            VERIFIERS_VERSION,
        )
        return False
    return True


def install(limit: int) -> bool:
    """Put verifiers' `ContainerRuntime.open_process` behind a semaphore of `limit` (False: not
    installed, on a verifiers version this hook was not written for).

    Raises:
        ValueError: `limit` is below 1.
    """
    if limit < 1:
        raise ValueError(f"the harness-start limit must be at least 1, got {limit}")
    if not _hookable():
        return False
    from arena_kit.verifiers_seam.container_hooks import limit_open_process

    limit_open_process(limit)
    return True


def install_host_liveness() -> bool:
    """Answer `alive()` of docker/podman boxes from the engine (`inspect`), not from inside the box
    (False: not installed, on a verifiers version this hook was not written for or lacking a name it needs)."""
    if not _hookable():
        return False
    from arena_kit.errors import SeamError
    from arena_kit.verifiers_seam.container_hooks import liveness_from_engine

    try:
        liveness_from_engine()
    except SeamError as error:
        logger.warning("%s", error)
        return False
    return True


def install_agent_faults() -> bool:
    """Type a harness turn that failed by the agent's doing (`arena_kit.box.faults`) on the engine's
    word (False: not installed; such failures then stay `HarnessError`s, still never retried)."""
    if not _hookable():
        return False
    from arena_kit.errors import SeamError
    from arena_kit.verifiers_seam.container_hooks import type_agent_faults

    try:
        type_agent_faults()
    except SeamError as error:
        logger.warning("%s", error)
        return False
    return True


def install_models_client() -> bool:
    """Relay `/v1/models` through one client per interception server (False: not installed; verifiers
    then opens one per request, as it does by default)."""
    if not _hookable():
        return False
    from arena_kit.verifiers_seam.interception import share_models_client

    if not share_models_client():
        logger.warning(
            "verifiers' InterceptionServer.handle_models is not the code arena_kit.verifiers_seam.interception "
            "replaces: each /v1/models opens its own client"
        )
        return False
    return True


def fail_closed(args: list[str], reason: str) -> list[str]:
    """vf-eval `args` whose config (`@ <path>`) has no retry rule a box could forge
    (`arena.retries.without_liveness`): the config is rewritten beside the original, and the note
    `<config stem>` + `FAIL_CLOSED_SUFFIX` says what was dropped and why. Args without a config: as given."""
    import tomllib

    import tomli_w

    from arena.retries import without_liveness

    if "@" not in args[:-1]:
        return args
    index = args.index("@") + 1
    path = Path(args[index])
    config = tomllib.loads(path.read_text())
    table, dropped = without_liveness(((config.get("env") or {}).get("retries")) or {})
    if not dropped:
        return args
    config["env"]["retries"] = table
    closed = path.with_name(f"{path.stem}.fail-closed{path.suffix}")
    closed.write_text(tomli_w.dumps(config))
    note = f"{reason}; dropped the retry rules: {', '.join(dropped)}"
    path.with_name(path.stem + FAIL_CLOSED_SUFFIX).write_text(note + "\n")
    logger.warning("fail closed: %s", note)
    return [*args[:index], str(closed), *args[index + 1 :]]


def main(argv: list[str] | None = None) -> None:
    """`LIMIT <vf-eval arguments>`: lighten vf-eval's start-up (`arena.vf_startup`), install the hooks
    (LIMIT 0: no start limit), then run vf-eval here; a finished run skips the interpreter's teardown
    (`arena.vf_exit`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or not args[0].isdigit():
        raise SystemExit("usage: python -m arena.vf_hooks LIMIT <vf-eval arguments>")
    vf_exit.arm()  # before any other atexit callback: it runs last
    warm = prewarm()  # first: its imports run while this process does its own
    lighten_imports()  # before anything imports verifiers.v1
    if int(args[0]):
        install(int(args[0]))
    vf_args = args[1:]
    if not install_host_liveness():
        vf_args = fail_closed(vf_args, "engine-side liveness is not installed on this verifiers")
    install_agent_faults()
    install_models_client()
    fast_server_polls()
    hand_over_tool_server(warm)
    from verifiers.v1.cli.eval.main import main as vf_eval

    sys.argv = ["vf-eval", *vf_args]
    try:
        vf_eval(vf_args)
    except SystemExit as exit_:
        vf_exit.finished(exit_.code)
        raise
    vf_exit.finished(0)


if __name__ == "__main__":
    main()
