"""The `arena` command: one entry point, one subcommand per job.

Exit codes: 0 success; 1 a run or gate failed; 2 usage, config or prerequisite error; 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from arena.choices import HARNESSES, SPLITS
from arena.errors import ArenaError, PrerequisiteError, UsageError

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]
BENCH_HELP = "runtime_bench: wall clock and CPU per rollout under concurrency, against the docker floor"
LATEST = "latest"


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
        args.registry, args.envs, lock_path=args.lock or DEFAULT_LOCK, configs=args.configs if args.update_configs else None,
        base=args.base, ca_bundle=_ca_bundle(args.ca_bundle) or default_ca_bundle(),
    )
    for image in published:
        print(f"{image.env}: {image.ref}")
    return 0


def _images_context(args: argparse.Namespace) -> int:
    from arena.images import default_ca_bundle
    from arena.images.standalone import PUBLIC_BASE, write_context

    dockerfile = write_context(args.env, args.out, base=args.base or PUBLIC_BASE, ca_bundle=_ca_bundle(args.ca_bundle) or default_ca_bundle())
    print(f"wrote {dockerfile} and its context; build it with `docker build {args.out}` or upload {args.out} to Prime's image builder")
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

    return run_demo(harness=args.harness, output_dir=args.output_dir, skip_build=args.skip_build, resume=args.resume)


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
    from arena.audit import build_report, write_report

    report = build_report(args.run_dir)
    json_path, md_path = write_report(report, args.out or args.run_dir)
    print(f"{report.total} rewrite(s)/denial(s) in {len(report.rollouts)} rollout(s): " + ", ".join(f"{k} {v}" for k, v in report.by_rule.items()))
    print(f"report: {md_path} and {json_path}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from arena.compare import compare_runs, render_comparison

    report = compare_runs(args.run_a, args.run_b, fail_if_worse=args.fail_if_worse, spread=args.spread)
    print(json.dumps(report.as_json(), indent=2) if args.json else render_comparison(report))
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return report.exit_code()


def _view(args: argparse.Namespace) -> int:
    from arena.view import export_html, serve_view

    if args.export is not None:
        size = export_html(args.run_dirs, args.export)
        print(f"wrote {args.export} ({size / 1e6:.1f} MB; one file, opens from file:// with no network)")
        return 0
    try:
        serve_view(args.run_dirs, host=args.host, port=args.port)
    except OSError as exc:
        raise PrerequisiteError(f"cannot serve on {args.host}:{args.port} ({exc.strerror or exc}): "
                                "pass another --port (0: any free one)") from None
    return 0


def _probe(args: argparse.Namespace) -> int:
    from arena.installed import environment_ids
    from arena.probe import PolicyScore, RuleResult, latest_probe, render_difficulty, report_gate, run_probe

    envs = args.envs or environment_ids()
    unknown = sorted(set(envs) - set(environment_ids()))
    if unknown:
        raise PrerequisiteError(f"unknown environment(s) {', '.join(unknown)}; installed: {', '.join(environment_ids())}")
    fixed = dict(_knob(text) for text in args.set)
    if args.resume is not None and args.vary:
        raise UsageError("--resume continues one probe; it cannot be combined with --vary")
    resume = None if args.resume is None else latest_probe(args.output_dir) if args.resume == LATEST else Path(args.resume)

    def probe(extra: dict[str, object]) -> tuple[list[PolicyScore], list[RuleResult], Path]:
        return run_probe(
            envs, harness=args.harness, tasks=args.tasks, split=args.split, seed=args.seed,
            policies=args.policies, taskset_args={**fixed, **extra}, output_dir=args.output_dir,
            max_concurrent=args.concurrency, parallel_evals=args.parallel, resume=resume,
        )

    if args.vary:
        knob, values = _knob_values(args.vary)
        tables = {}
        for value in values:
            scores, _failures, report = probe({knob: value})
            tables[str(value)] = scores
            print(f"\n{knob}={value}: report {report}")
        print(f"\ndifficulty by {knob} (mean score; {args.tasks} {args.split} tasks each):\n" + render_difficulty(knob, tables))
        return 1 if any(s.failed for scores in tables.values() for s in scores) else 0
    scores, results, report = probe({})
    return report_gate(scores, results, report)


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
    parser = argparse.ArgumentParser(prog="arena", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    images = sub.add_parser("images", help="build the Docker images (no registry needed), publish them, or write a standalone context")
    images.set_defaults(handler=lambda _args: _usage(images))
    images_sub = images.add_subparsers(dest="images_command", metavar="ACTION")
    build = images_sub.add_parser("build", help="build images (content-hash cached: unchanged = no-op)")
    build.add_argument("names", nargs="*", metavar="NAME", help="images to build with their parents (default: all)")
    build.add_argument("--base", metavar="IMAGE", help="start from this local image instead of a debootstrap rootfs")
    build.add_argument("--rebuild", action="store_true", help="build even when an image with the same content hash exists")
    build.add_argument("--mirror", metavar="URL", help="Debian mirror for debootstrap (default deb.debian.org)")
    build.add_argument(
        "--ca-bundle", type=Path, metavar="PATH",
        help="extra CA bundle trusted during the build only (default $ARENA_CA_BUNDLE, else $SSL_CERT_FILE)",
    )
    build.set_defaults(handler=_images_build)
    publish = images_sub.add_parser("publish", help="push the environment images to a registry; lock name → digest")
    publish.add_argument("--registry", required=True, metavar="HOST[:PORT]/NAMESPACE",
                         help="e.g. ghcr.io/you or 127.0.0.1:5000/arena; images go to <registry>/<env>")
    publish.add_argument("--env", action="append", dest="envs", metavar="ENV", help="only this environment image (repeatable; default: all)")
    publish.add_argument("--lock", type=Path, default=None, metavar="PATH", help="the lock file to update (default configs/images.lock.json)")
    publish.add_argument("--update-configs", action="store_true",
                         help="also set the [env.agent.runtime] image of each <configs>/<env>-*-prime.toml to the pushed digest")
    publish.add_argument("--configs", type=Path, default=Path("configs"), metavar="DIR", help="where the prime configs are (default configs)")
    publish.add_argument("--base", metavar="IMAGE", help="as for `build`: the images to push were built from this base")
    publish.add_argument("--ca-bundle", type=Path, metavar="PATH", help="as for `build`, when an image must be built first")
    publish.set_defaults(handler=_images_publish)
    context = images_sub.add_parser("context", help="write a self-contained Dockerfile context (FROM public Debian) for Prime's builder")
    context.add_argument("--env", required=True, metavar="ENV", help="the environment image")
    context.add_argument("--out", required=True, type=Path, metavar="DIR", help="a new or empty directory")
    context.add_argument("--base", metavar="IMAGE", default=None, help="the image the Dockerfile starts FROM (default debian:bookworm-slim)")
    context.add_argument("--ca-bundle", type=Path, metavar="PATH",
                         help="CA bundle the harness stage trusts while it downloads (default $ARENA_CA_BUNDLE, else $SSL_CERT_FILE)")
    context.set_defaults(handler=_images_context)

    serve = sub.add_parser("serve", help="serve the scripted-policy model (chat, responses, messages)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.set_defaults(handler=_serve)

    demo = sub.add_parser("demo", help="the main job on the embedded default: build images, run a small eval")
    demo.add_argument("--harness", default="bash", choices=HARNESSES)
    demo.add_argument("--output-dir", type=Path, default=Path("outputs"))
    demo.add_argument("--skip-build", action="store_true", help="assume the images are built")
    demo.add_argument("--resume", action="store_true",
                      help="finish the newest demo of this harness in --output-dir: its finished episodes are not run again")
    demo.set_defaults(handler=_demo)

    # The bench parses its own flags (runtime_bench.cli), imported only when it runs: `arena --help`
    # must not pay for the bench's imports. `arena bench --help` reaches the bench's parser.
    bench = sub.add_parser("bench", help=BENCH_HELP, add_help=False, prefix_chars="\0")
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(handler=_bench)

    reap = sub.add_parser("reap", help="remove containers Arena started (labelled arena.managed=true)")
    reap.add_argument("--run", metavar="ID", help="only this run's containers")
    reap.add_argument("--all", action="store_true", help="every Arena container, whatever run")
    reap.set_defaults(handler=_reap)

    probe = sub.add_parser("probe", help="the degenerate-policy gate: every scripted policy through a real harness")
    probe.add_argument("envs", nargs="*", metavar="ENV", help="environment ids (default: every installed one)")
    probe.add_argument("--harness", default="bash", choices=HARNESSES)
    probe.add_argument("--tasks", type=int, default=20, help="tasks per policy (default 20)")
    probe.add_argument("--split", default="dev", choices=SPLITS, help="the split's tasks (default dev)")
    probe.add_argument("--seed", type=int, default=None, help="shuffle the split with this seed (default: its first N tasks)")
    probe.add_argument("--policies", type=lambda text: [p.strip() for p in text.split(",") if p.strip()], default=[],
                       metavar="PATTERNS", help="only policies matching these comma-separated shell patterns, e.g. 'shortcut_*,exhaustive' (staller and oracle always run)")
    probe.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a taskset option for every environment, e.g. --set services=40 (repeatable)")
    probe.add_argument("--vary", metavar="KEY=V1,V2", help="run the probe once per value of one taskset option and print the difficulty table (a report: no gate)")
    probe.add_argument("--concurrency", type=int, default=4, help="rollouts at once per policy")
    probe.add_argument("--parallel", type=int, default=2, help="policies (vf-eval runs) at once")
    probe.add_argument("--output-dir", type=Path, default=Path("outputs"))
    probe.add_argument("--resume", nargs="?", const=LATEST, metavar="PROBE_DIR",
                       help="finish an interrupted probe (default: the newest under --output-dir) with the same arguments: "
                            "complete policies are kept, the others resume their vf-eval runs")
    probe.set_defaults(handler=_probe)

    audit = sub.add_parser("audit", help="report every tool-result rewrite and denial of a run")
    audit.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a vf-eval run directory (holds traces.jsonl)")
    audit.add_argument("--out", type=Path, help="where to write audit.md and audit.json (default: RUN_DIR)")
    audit.set_defaults(handler=_audit)

    compare = sub.add_parser("compare", help="each run against a baseline on their shared tasks: exact paired test, its interval, Holm")
    compare.add_argument("run_a", type=Path, metavar="BASELINE", help="a vf-eval run directory (holds traces.jsonl): A")
    compare.add_argument("run_b", type=Path, nargs="+", metavar="RUN", help="runs on the same tasks, each B; the difference is B − A")
    compare.add_argument("--json", action="store_true", help="print the result as JSON")
    compare.add_argument("--fail-if-worse", type=float, metavar="DELTA", default=None,
                         help="exit 1 if a run is shown worse than the baseline by more than DELTA (upper bound of B − A < −DELTA), "
                              "3 if that cannot be told with these tasks, 0 if every run is shown within DELTA")
    compare.add_argument("--spread", type=float, default=0.5, metavar="SD",
                         help="the assumed sd of per-task differences for the planning figure (default 0.5)")
    compare.set_defaults(handler=_compare)

    view = sub.add_parser("view", help="browse runs, episodes and transcripts in a browser; compare runs")
    view.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                      help="vf-eval run directories, or directories holding them (a probe, a demo's outputs)")
    view.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    view.add_argument("--port", type=int, default=8777, help="port to serve on (default 8777; 0: any free port)")
    view.add_argument("--export", type=Path, metavar="FILE.html", help="write one self-contained HTML file instead of serving")
    view.set_defaults(handler=_view)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # progress lines show up at once in a log or a pipe
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    handler: Command = getattr(args, "handler", lambda _args: _usage(parser))
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except ArenaError as exc:
        print(f"arena: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (PrerequisiteError, UsageError)) else 1
    except Exception as exc:
        worded = _docker_problem(exc)
        if worded is None:
            raise
        print(f"arena: {worded}", file=sys.stderr)
        return 2


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
        return (f"a container or image vanished during the run: {reason}. Fix: if the engine restarted, "
                "`arena reap --run <run>` removes what the run left, then re-run.")
    if errors is not None and isinstance(exc, errors.APIError):
        return f"the Docker engine refused a call: {reason}. Fix: {restart}."
    if transport is not None and isinstance(exc, transport.ConnectionError) or errors is not None and isinstance(exc, errors.DockerException):
        return f"Docker engine not reachable: {reason}. Fix: {restart}."
    return None


if __name__ == "__main__":
    sys.exit(main())
