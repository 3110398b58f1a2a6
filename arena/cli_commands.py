"""What each `arena` subcommand does once its flags are parsed: the handlers `arena.cli`'s parser dispatches to."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from arena.errors import PrerequisiteError, UsageError

__all__ = [
    "LATEST",
    "handle_audit",
    "handle_bench",
    "handle_compare",
    "handle_demo",
    "handle_images_build",
    "handle_images_context",
    "handle_images_publish",
    "handle_new_env",
    "handle_probe",
    "handle_reap",
    "handle_serve",
    "handle_view",
]

LATEST = "latest"
"""`probe --resume` with no PROBE_DIR: the newest probe under --output-dir."""


def handle_images_build(args: argparse.Namespace) -> int:
    from arena.images import build_images, default_ca_bundle

    ca_bundle = args.ca_bundle if args.ca_bundle is not None else default_ca_bundle()
    if ca_bundle is not None and not ca_bundle.is_file():
        raise PrerequisiteError(f"--ca-bundle {ca_bundle} is not a file")
    kwargs = {"mirror": args.mirror} if args.mirror else {}
    results = build_images(args.names or None, base=args.base, rebuild=args.rebuild, ca_bundle=ca_bundle, **kwargs)
    built = sum(r.built for r in results)
    print(f"{len(results)} images ready ({built} built, {len(results) - built} up to date)")
    return 0


def handle_images_publish(args: argparse.Namespace) -> int:
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


def handle_images_context(args: argparse.Namespace) -> int:
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


def handle_serve(args: argparse.Namespace) -> int:
    from arena.server import serve

    serve(args.host, args.port)
    return 0


def handle_demo(args: argparse.Namespace) -> int:
    from arena.demo import run_demo
    from arena.supervise import stop_on_signals

    with stop_on_signals():
        return run_demo(
            harness=args.harness, output_dir=args.output_dir, skip_build=args.skip_build, resume=args.resume
        )


def handle_reap(args: argparse.Namespace) -> int:
    from arena.reaper import reap

    removed = reap(run=args.run, everything=args.all)
    print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0


def handle_bench(args: argparse.Namespace) -> int:
    from runtime_bench.cli import main as bench_main

    return bench_main(args.bench_args, verbose=args.verbose)


def handle_audit(args: argparse.Namespace) -> int:
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


def handle_compare(args: argparse.Namespace) -> int:
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


def handle_view(args: argparse.Namespace) -> int:
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


def handle_probe(args: argparse.Namespace) -> int:
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


def handle_new_env(args: argparse.Namespace) -> int:
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
