"""The `arena` command: one entry point, one subcommand per job.

Exit codes: 0 success; 1 a run or gate failed; 2 usage, input, config or prerequisite error (one line,
no traceback); 3 a gate or comparison undecided (`probe`, `compare --fail-if-worse`: run more tasks);
70 an internal error (its traceback goes to a log file the message names); 130 Ctrl-C,
129 SIGHUP, 143 SIGTERM (`probe` and `demo` stop their evals and reap their boxes first).

Here: the parser, the dispatch and what an escaped exception exits with. Each subcommand's handler is
in `arena.cli_commands`, its help text in `arena.cli_help`.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from arena import cli_commands as commands
from arena.choices import HARNESSES, SPLITS
from arena.cli_help import EXIT_CODES, add_command
from arena.errors import ArenaError, PrerequisiteError, TraceError, UsageError

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]
INTERNAL_ERROR = 70
"""sysexits EX_SOFTWARE: apart from 3, which `probe` and `compare --fail-if-worse` give an undecided verdict."""
CRASH_DIR_ENV = "ARENA_CRASH_DIR"
"""Where an internal error's traceback is written (default: `<temp dir>/arena-crashes`)."""


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _port(text: str) -> int:
    """argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535; 0: any free one)")
    return port


def _positive(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena",
        description=__doc__.splitlines()[0],
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging (and an internal error's traceback on stderr)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    images = add_command(sub, "images")
    images.set_defaults(handler=lambda _args: _usage(images))
    images_sub = images.add_subparsers(dest="images_command", metavar="ACTION")
    build = add_command(images_sub, "images build")
    build.add_argument("names", nargs="*", metavar="NAME", help="images to build with their parents (default: all)")
    build.add_argument("--base", metavar="IMAGE", help="start from this local image instead of a debootstrap rootfs")
    build.add_argument(
        "--rebuild", action="store_true", help="build even when an image with the same content hash exists"
    )
    build.add_argument("--mirror", metavar="URL", help="Debian mirror for debootstrap (default deb.debian.org)")
    build.add_argument(
        "--ca-bundle",
        type=Path,
        metavar="PATH",
        help="extra CA bundle trusted during the build only (default $ARENA_CA_BUNDLE, else $SSL_CERT_FILE)",
    )
    build.set_defaults(handler=commands.handle_images_build)
    publish = add_command(images_sub, "images publish")
    publish.add_argument(
        "--registry",
        required=True,
        metavar="HOST[:PORT]/NAMESPACE",
        help="e.g. ghcr.io/you or 127.0.0.1:5000/arena; images go to <registry>/<env>",
    )
    publish.add_argument(
        "--env",
        action="append",
        dest="envs",
        metavar="ENV",
        help="only this environment image (repeatable; default: all)",
    )
    publish.add_argument(
        "--lock",
        type=Path,
        default=None,
        metavar="PATH",
        help="the lock file to update (default configs/images.lock.json, which the prime configs read)",
    )
    publish.add_argument("--base", metavar="IMAGE", help="as for `build`: the images to push were built from this base")
    publish.add_argument(
        "--ca-bundle", type=Path, metavar="PATH", help="as for `build`, when an image must be built first"
    )
    publish.set_defaults(handler=commands.handle_images_publish)
    context = add_command(images_sub, "images context")
    context.add_argument("--env", required=True, metavar="ENV", help="the environment image")
    context.add_argument("--out", required=True, type=Path, metavar="DIR", help="a new or empty directory")
    context.add_argument(
        "--base",
        metavar="IMAGE",
        default=None,
        help="the image the Dockerfile starts FROM (default debian:bookworm-slim)",
    )
    context.add_argument(
        "--ca-bundle",
        type=Path,
        metavar="PATH",
        help="CA bundle the harness stage trusts while it downloads (default $ARENA_CA_BUNDLE, else $SSL_CERT_FILE)",
    )
    context.set_defaults(handler=commands.handle_images_context)

    serve = add_command(sub, "serve")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="port to serve on (default 8765; 0: any free one)")
    serve.set_defaults(handler=commands.handle_serve)

    demo = add_command(sub, "demo")
    demo.add_argument("--harness", default="bash", choices=HARNESSES)
    demo.add_argument("--output-dir", type=Path, default=Path("outputs"))
    demo.add_argument("--skip-build", action="store_true", help="assume the images are built")
    demo.add_argument(
        "--resume",
        action="store_true",
        help="finish the newest demo of this harness in --output-dir: its finished episodes are not run again",
    )
    demo.set_defaults(handler=commands.handle_demo)

    # The bench parses its own flags (runtime_bench.cli), imported only when it runs: `arena --help`
    # must not pay for the bench's imports. `arena bench --help` reaches the bench's parser.
    bench = add_command(sub, "bench", add_help=False, prefix_chars="\0")
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(handler=commands.handle_bench)

    reap = add_command(sub, "reap")
    reap.add_argument("--run", metavar="ID", help="only this run's containers")
    reap.add_argument("--all", action="store_true", help="every Arena container, whatever run")
    reap.set_defaults(handler=commands.handle_reap)

    probe = add_command(sub, "probe")
    probe.add_argument("envs", nargs="*", metavar="ENV", help="environment ids (default: every installed one)")
    probe.add_argument("--harness", default="bash", choices=HARNESSES)
    probe.add_argument("--tasks", type=_positive, default=20, help="tasks per policy (default 20)")
    probe.add_argument("--split", default="dev", choices=SPLITS, help="the split's tasks (default dev)")
    probe.add_argument(
        "--seed", type=int, default=None, help="shuffle the split with this seed (default: its first N tasks)"
    )
    probe.add_argument(
        "--policies",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=[],
        metavar="PATTERNS",
        help="only policies matching these comma-separated shell patterns, e.g. 'shortcut_*,exhaustive' (staller and oracle always run)",
    )
    probe.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a taskset option for every environment, e.g. --set services=40 (repeatable)",
    )
    probe.add_argument(
        "--vary",
        metavar="KEY=V1,V2",
        help="run the probe once per value of one taskset option and print the difficulty table (a report: no gate)",
    )
    probe.add_argument("--concurrency", type=_positive, default=4, help="rollouts at once per policy")
    probe.add_argument("--parallel", type=_positive, default=2, help="policies (vf-eval runs) at once")
    probe.add_argument("--output-dir", type=Path, default=Path("outputs"))
    probe.add_argument(
        "--resume",
        nargs="?",
        const=commands.LATEST,
        metavar="PROBE_DIR",
        help="finish an interrupted probe (default: the newest under --output-dir) with the same arguments: "
        "complete policies are kept, the others resume their vf-eval runs",
    )
    probe.set_defaults(handler=commands.handle_probe)

    new_env = add_command(sub, "new-env")
    new_env.add_argument(
        "name", metavar="NAME", help="the environment's verifiers id: lower-case words joined by '-' (e.g. demo-env)"
    )
    new_env.add_argument(
        "--dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="a new folder for the package (default environments/<package> in a checkout, else ./<package>)",
    )
    new_env.set_defaults(handler=commands.handle_new_env)

    audit = add_command(sub, "audit")
    audit.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a vf-eval run directory (holds traces.jsonl)")
    audit.add_argument(
        "--out",
        type=Path,
        help="write audit.md and audit.json into this directory (default: write nothing, print the report)",
    )
    audit.set_defaults(handler=commands.handle_audit)

    compare = add_command(sub, "compare")
    compare.add_argument("run_a", type=Path, metavar="BASELINE", help="a vf-eval run directory (holds traces.jsonl): A")
    compare.add_argument(
        "run_b", type=Path, nargs="+", metavar="RUN", help="runs on the same tasks, each B; the difference is B − A"
    )
    compare.add_argument("--json", action="store_true", help="print the result as JSON")
    compare.add_argument(
        "--fail-if-worse",
        type=float,
        metavar="DELTA",
        default=None,
        help="exit 1 if a run is shown worse than the baseline by more than DELTA (upper bound of B − A < −DELTA), "
        "3 if that cannot be told with these tasks, 0 if every run is shown within DELTA",
    )
    compare.add_argument(
        "--spread",
        type=float,
        default=0.5,
        metavar="SD",
        help="the assumed sd of per-task differences for the planning figure (default 0.5)",
    )
    compare.set_defaults(handler=commands.handle_compare)

    view = add_command(sub, "view")
    view.add_argument(
        "run_dirs",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="vf-eval run directories, or directories holding them (a probe, a demo's outputs)",
    )
    view.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    view.add_argument("--port", type=_port, default=8777, help="port to serve on (default 8777; 0: any free port)")
    view.add_argument(
        "--export", type=Path, metavar="FILE.html", help="write one self-contained HTML file instead of serving"
    )
    view.set_defaults(handler=commands.handle_view)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("arena-evals")
    except PackageNotFoundError:
        return "(not installed: a source checkout)"


def _subparser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` chose: the one whose usage an error should show."""
    chosen = parser
    for dest in ("command", "images_command"):
        actions = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, dest, None)
        if not actions or name is None or name not in actions[0].choices:
            break
        chosen = actions[0].choices[name]
    return chosen


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse like `parse_args`, but an unknown flag is reported with its subcommand's usage."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        _subparser(parser, args).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = _parse(parser, argv)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # progress lines show up at once in a log or a pipe
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    handler: Command = getattr(args, "handler", lambda _args: _usage(parser))
    try:
        return handler(args)
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)
        print(f"stopped by {exc}" if signum else "interrupted", file=sys.stderr)
        return 128 + signum if signum else 130
    except ArenaError as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (PrerequisiteError, UsageError, TraceError)) else 1
    except Exception as exc:
        worded = _docker_problem(exc)
        if worded is not None:
            print(f"arena: {worded}", file=sys.stderr)
            return 2
        return _internal_error(exc, args.verbose)


def _internal_error(exc: Exception, verbose: bool) -> int:
    """Say a bug is a bug: one line naming the exception and the file its traceback went to."""
    text = "".join(traceback.format_exception(exc))
    folder = Path(os.environ.get(CRASH_DIR_ENV) or Path(tempfile.gettempdir()) / "arena-crashes")
    log = folder / f"arena-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        log.write_text(f"arena {_version()}: {' '.join(sys.argv)}\n{text}")
        where = f"the traceback is in {log}"
    except OSError as write_error:
        where = f"its traceback could not be written to {log} ({write_error.strerror}); run again with -v to see it"
    reason = (str(exc).splitlines() or [""])[0][:200]
    print(
        f"arena: internal error ({type(exc).__name__}: {reason}), a bug in arena, not in your input; {where}",
        file=sys.stderr,
    )
    if verbose:
        print(text, file=sys.stderr, end="")
    return INTERNAL_ERROR


def _docker_problem(exc: BaseException) -> str | None:
    """What a raw Docker SDK / HTTP failure means and how to fix it (None: not a Docker failure).

    Looked up in `sys.modules` so the CLI path never imports the SDK itself: an exception of a
    module that was never imported cannot be raised."""
    errors, transport = sys.modules.get("docker.errors"), sys.modules.get("requests.exceptions")
    restart = "check `docker info` and the daemon log (/var/log/arena-dockerd.log), start it with `images/ensure-docker.sh` if it is down, then re-run"
    reason = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    if errors is not None and isinstance(exc, errors.ImageNotFound):
        return f"Docker image missing: {reason}. Fix: build the images with `arena images build`, then re-run."
    if errors is not None and isinstance(exc, errors.NotFound):
        return (
            f"a container or image vanished during the run: {reason}. Fix: if the engine restarted, "
            "`arena reap --run <run>` removes what the run left, then re-run."
        )
    if errors is not None and isinstance(exc, errors.APIError):
        return f"the Docker engine refused a call: {reason}. Fix: {restart}."
    if (
        transport is not None
        and isinstance(exc, transport.ConnectionError)
        or errors is not None
        and isinstance(exc, errors.DockerException)
    ):
        return f"Docker engine not reachable: {reason}. Fix: {restart}."
    return None


if __name__ == "__main__":
    sys.exit(main())
