"""The `arena` command: one entry point, one subcommand per job.

Exit codes: 0 success; 1 a run or gate failed; 2 usage, input, config or prerequisite error (one line,
no traceback); 3 a gate or comparison undecided (`probe`, `compare --fail-if-worse`: run more tasks);
70 an internal error (its traceback goes to a log file the message names); 130 Ctrl-C,
129 SIGHUP, 143 SIGTERM (`probe` and `demo` stop their evals and reap their boxes first).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from arena.choices import HARNESSES, SPLITS
from arena.cli_help import EXIT_CODES, add_command
from arena.errors import ArenaError, PrerequisiteError, TraceError, UsageError

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]
LATEST = "latest"
INTERNAL_ERROR = 70
"""sysexits EX_SOFTWARE: apart from 3, which `probe` and `compare --fail-if-worse` give an undecided verdict."""
CRASH_DIR_ENV = "ARENA_CRASH_DIR"
"""Where an internal error's traceback is written (default: `<temp dir>/arena-crashes`)."""


def _images_build(args: argparse.Namespace) -> int:
    from arena.images import build_images, default_ca_bundle

    ca_bundle = args.ca_bundle if args.ca_bundle is not None else default_ca_bundle()
    if ca_bundle is not None and not ca_bundle.is_file():
        raise PrerequisiteError(f"--ca-bundle {ca_bundle} is not a file")
    kwargs = {"mirror": args.mirror} if args.mirror else {}
    results = build_images(args.names or None, base=args.base, rebuild=args.rebuild, ca_bundle=ca_bundle, **kwargs)
    built = sum(r.built for r in results)
    print(f"{len(results)} images ready ({built} built, {len(results) - built} up to date)")
    return 0


def _images_publish(args: argparse.Namespace) -> int:
    from arena.images import default_ca_bundle
    from arena.images.lock import DEFAULT_LOCK
    from arena.images.publish import publish

    published = publish(
        args.registry,
        args.envs,
        lock_path=args.lock or DEFAULT_LOCK,
        base=args.base,
        ca_bundle=_ca_bundle(args.ca_bundle) or default_ca_bundle(),
    )
    for image in published:
        print(f"{image.env}: {image.ref}")
    return 0


def _images_context(args: argparse.Namespace) -> int:
    from arena.images import default_ca_bundle
    from arena.images.standalone import PUBLIC_BASE, write_context

    dockerfile = write_context(
        args.env, args.out, base=args.base or PUBLIC_BASE, ca_bundle=_ca_bundle(args.ca_bundle) or default_ca_bundle()
    )
    print(
        f"wrote {dockerfile} and its context; build it with `docker build {args.out}` or upload {args.out} to Prime's image builder"
    )
    return 0


def _ca_bundle(path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise PrerequisiteError(f"--ca-bundle {path} is not a file")
    return path


def _serve(args: argparse.Namespace) -> int:
    from arena.server import serve

    serve(args.host, args.port)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from arena.demo import run_demo
    from arena.supervise import stop_on_signals

    with stop_on_signals():
        return run_demo(
            harness=args.harness, output_dir=args.output_dir, skip_build=args.skip_build, resume=args.resume
        )


def _reap(args: argparse.Namespace) -> int:
    from arena.reaper import reap

    removed = reap(run=args.run, everything=args.all)
    print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from runtime_bench.cli import main as bench_main

    return bench_main(args.bench_args, verbose=args.verbose)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _audit(args: argparse.Namespace) -> int:
    from arena.audit import build_report, render_report, summary_line, write_report

    _run_dir(args.run_dir)
    report = build_report(args.run_dir)
    print(summary_line(report))
    if args.out is None:
        print(render_report(report), end="")
        return 0
    try:
        json_path, md_path = write_report(report, args.out)
    except OSError as exc:
        raise UsageError(f"cannot write the report to --out {args.out}: {exc.strerror or exc}") from None
    print(f"report: {md_path} and {json_path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from arena.compare import compare_runs, render_comparison
    from arena.traces import read_traces

    for run in (args.run_a, *args.run_b):
        _run_dir(run)
        log = read_traces(run)
        if log.exists and not log.episodes:
            raise UsageError(f"{run}: no episodes (its traces.jsonl is empty: the run has not finished an episode)")
    report = compare_runs(args.run_a, args.run_b, fail_if_worse=args.fail_if_worse, spread=args.spread)
    print(json.dumps(report.as_json(), indent=2) if args.json else render_comparison(report))
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return report.exit_code()


def _run_dir(path: Path) -> None:
    """Raises:
    UsageError: `path` is not a directory (a run's traces file given instead of its folder, a typo).
    """
    if path.is_dir():
        return
    if path.is_file() and path.name == "traces.jsonl":
        raise UsageError(f"{path} is a run's traces file: give its directory, {path.parent}")
    raise UsageError(
        f"{path} {'is not a directory' if path.exists() else 'does not exist'}: give the directory of one vf-eval run"
    )


def _view(args: argparse.Namespace) -> int:
    from arena.view import load_catalog
    from arena.view.export import export_page
    from arena.view.server import run_server

    catalog = load_catalog(args.run_dirs)
    broken = [run for run in catalog.runs.values() if run.problem]
    if len(broken) == len(catalog.runs):
        raise UsageError("no run can be read: " + "; ".join(f"{run.path}: {run.problem}" for run in broken))
    for run in broken:
        print(f"arena view: {run.path} cannot be read, the others open: {run.problem}", file=sys.stderr)
    if args.export is not None:
        size = export_page(catalog, args.export)
        print(f"wrote {args.export} ({size / 1e6:.1f} MB; one file, opens from file:// with no network)")
        return 0
    try:
        run_server(catalog, args.host, args.port)
    except OSError as exc:
        raise PrerequisiteError(
            f"cannot serve on {args.host}:{args.port} ({exc.strerror or exc}): pass another --port (0: any free one)"
        ) from None
    return 0


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


def _probe(args: argparse.Namespace) -> int:
    from arena.installed import environment_ids, preflight
    from arena.probe import latest_probe
    from arena.supervise import stop_on_signals

    envs = args.envs or environment_ids()
    unknown = sorted(set(envs) - set(environment_ids()))
    if unknown:
        raise PrerequisiteError(
            f"unknown environment(s) {', '.join(unknown)}; installed: {', '.join(environment_ids())}"
        )
    for env in envs:
        preflight(env)
    fixed = dict(_knob(text) for text in args.set)
    if args.resume is not None and args.vary:
        raise UsageError("--resume continues one probe; it cannot be combined with --vary")
    resume = (
        None if args.resume is None else latest_probe(args.output_dir) if args.resume == LATEST else Path(args.resume)
    )
    with stop_on_signals():
        return _run_probe(args, envs, fixed, resume)


def _run_probe(args: argparse.Namespace, envs: Sequence[str], fixed: dict[str, object], resume: Path | None) -> int:
    from arena.probe import PolicyScore, RuleResult, render_difficulty, report_gate, run_probe

    def probe(extra: dict[str, object]) -> tuple[list[PolicyScore], list[RuleResult], Path]:
        return run_probe(
            envs,
            harness=args.harness,
            tasks=args.tasks,
            split=args.split,
            seed=args.seed,
            policies=args.policies,
            taskset_args={**fixed, **extra},
            output_dir=args.output_dir,
            max_concurrent=args.concurrency,
            parallel_evals=args.parallel,
            resume=resume,
        )

    if args.vary:
        knob, values = _knob_values(args.vary)
        tables = {}
        for value in values:
            scores, _failures, report = probe({knob: value})
            tables[str(value)] = scores
            print(f"\n{knob}={value}: report {report}")
        print(
            f"\ndifficulty by {knob} (mean score; {args.tasks} {args.split} tasks each):\n"
            + render_difficulty(knob, tables)
        )
        return 1 if any(s.failed for scores in tables.values() for s in scores) else 0
    scores, results, report = probe({})
    return report_gate(scores, results, report)


def _new_env(args: argparse.Namespace) -> int:
    from arena.new_env import new_environment, next_steps

    names, folder, written = new_environment(args.name, args.dir)
    print(
        f"wrote {names.env_id} (package {names.package}) into {folder}: "
        + ", ".join(str(p.relative_to(folder)) for p in written)
    )
    print("next: " + " && ".join(next_steps(names, folder)) + "  (docs/new-environment.md)")
    return 0


def _knob(text: str) -> tuple[str, object]:
    """`KEY=VALUE`, the value read as JSON where it parses (numbers, booleans), else as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), _value(raw.strip())


def _knob_values(text: str) -> tuple[str, list[object]]:
    """`KEY=V1,V2,...`"""
    key, raw = _knob(text)
    values = [_value(v.strip()) for v in str(raw).split(",") if v.strip()] if isinstance(raw, str) else [raw]
    if not values:
        raise UsageError(f"--vary {text!r} names no values")
    return key, values


def _value(raw: str) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


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
    build.set_defaults(handler=_images_build)
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
    publish.set_defaults(handler=_images_publish)
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
    context.set_defaults(handler=_images_context)

    serve = add_command(sub, "serve")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="port to serve on (default 8765; 0: any free one)")
    serve.set_defaults(handler=_serve)

    demo = add_command(sub, "demo")
    demo.add_argument("--harness", default="bash", choices=HARNESSES)
    demo.add_argument("--output-dir", type=Path, default=Path("outputs"))
    demo.add_argument("--skip-build", action="store_true", help="assume the images are built")
    demo.add_argument(
        "--resume",
        action="store_true",
        help="finish the newest demo of this harness in --output-dir: its finished episodes are not run again",
    )
    demo.set_defaults(handler=_demo)

    # The bench parses its own flags (runtime_bench.cli), imported only when it runs: `arena --help`
    # must not pay for the bench's imports. `arena bench --help` reaches the bench's parser.
    bench = add_command(sub, "bench", add_help=False, prefix_chars="\0")
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(handler=_bench)

    reap = add_command(sub, "reap")
    reap.add_argument("--run", metavar="ID", help="only this run's containers")
    reap.add_argument("--all", action="store_true", help="every Arena container, whatever run")
    reap.set_defaults(handler=_reap)

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
        const=LATEST,
        metavar="PROBE_DIR",
        help="finish an interrupted probe (default: the newest under --output-dir) with the same arguments: "
        "complete policies are kept, the others resume their vf-eval runs",
    )
    probe.set_defaults(handler=_probe)

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
    new_env.set_defaults(handler=_new_env)

    audit = add_command(sub, "audit")
    audit.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a vf-eval run directory (holds traces.jsonl)")
    audit.add_argument(
        "--out",
        type=Path,
        help="write audit.md and audit.json into this directory (default: write nothing, print the report)",
    )
    audit.set_defaults(handler=_audit)

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
    compare.set_defaults(handler=_compare)

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
    view.set_defaults(handler=_view)
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
