"""`arena bench`: the concurrency cost report. `arena` hands its arguments to `main` only when
`bench` runs, so `arena --help` never imports the bench (or, through it, verifiers).

Exit codes follow `arena`: 0 every rollout succeeded and nothing leaked; 1 a rollout failed or a
container leaked (the report is still written); 2 a usage or prerequisite error, printed without
a traceback; Ctrl-C is re-raised after the running eval is stopped and its containers reaped.
`--ab` runs nothing: 0 no figure regressed, 1 one did (or the after side failed rollouts in more runs).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from arena.choices import HARNESSES
from arena.errors import ArenaError, PrerequisiteError, UsageError
from runtime_bench.config import CAPACITY, QUICK, BenchConfig, Placement, RuntimeType
from runtime_bench.model import ReportPaths

__all__ = [
    "DESCRIPTION",
    "HELP",
    "INSTALL_BENCH",
    "build_parser",
    "config_from_args",
    "handle",
    "main",
    "render_saved",
    "require_bench_extra",
]

HELP = "wall clock and CPU per rollout under concurrency, against the docker floor"
DESCRIPTION = (
    "Run K scripted rollouts per concurrency level for each configuration (runtime × harness × "
    "toolset placement × model latency; runtime `docker` is verifiers' stock docker path, `docker-lean` "
    "Arena's lean one, `docker-pool` the lean one with its warm box pool), measure the `docker run` / `docker exec` floor in the same run, and write "
    "report.md, report.json, report.png and capacity.png."
)
BENCH_EXTRA_MODULES = ("matplotlib",)
"""What the `bench` extra of arena-evals adds (pyproject.toml): the platform installs without it."""
INSTALL_BENCH = "pip install 'arena-evals[bench]'"
AB_LIMIT = 0.10
"""The change `--ab` calls a regression unless told otherwise."""


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _levels(value: str) -> list[int]:
    try:
        return [int(part) for part in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"levels are comma-separated integers, got {value!r}") from None


def _seconds(value: str) -> list[float]:
    try:
        return [float(part) for part in _csv(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"latencies are comma-separated seconds, got {value!r}") from None


def build_parser(prog: str = "arena bench") -> argparse.ArgumentParser:
    """The bench's own parser (`arena bench` and `python -m runtime_bench` both use it)."""
    bench = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    preset = bench.add_mutually_exclusive_group()
    preset.add_argument(
        "--quick",
        action="store_true",
        help="bash on the stock path vs arena-bash on the lean path without and with the warm pool, levels 1,8, "
        "8 rollouts per level (a few minutes)",
    )
    preset.add_argument(
        "--capacity",
        action="store_true",
        help="capacity report: arena-bash, claude_code, codex on the lean path (arena-bash also with the warm pool) at "
        "model latencies 2,10 s, levels 1,8,32 (~25 min)",
    )
    bench.add_argument(
        "--runtime", type=_csv, metavar="LIST", help=f"{','.join(get_args(RuntimeType))} (default docker,docker-lean)"
    )
    bench.add_argument("--harness", type=_csv, metavar="LIST", help=f"{','.join(HARNESSES)} (default all)")
    bench.add_argument(
        "--pairs",
        type=_csv,
        metavar="LIST",
        help="explicit runtime/harness pairs, e.g. docker/bash,docker-lean/arena-bash (instead of --runtime × --harness)",
    )
    bench.add_argument(
        "--latency", type=_seconds, metavar="LIST", help="seconds the policy waits per model call (default 0)"
    )
    bench.add_argument(
        "--sweep", type=int, metavar="N", help="capacity table: project the wall time of N rollouts (default 1000)"
    )
    bench.add_argument("--env", metavar="ID", help="verifiers taskset id (default arena-bench, the bench's own)")
    bench.add_argument(
        "--toolset",
        type=_csv,
        metavar="LIST",
        help=f"arena-bench MCP placement: {','.join(get_args(Placement))} (default shared)",
    )
    bench.add_argument("--levels", type=_levels, metavar="LIST", help="concurrency levels (default 1,2,4,8,16,32)")
    bench.add_argument(
        "-k", "--rollouts", type=int, metavar="K", help="rollouts per level, at least the level (default 16)"
    )
    bench.add_argument(
        "--image", metavar="REF", help="container image (default arena/harness:latest; on prime: verifiers' default)"
    )
    bench.add_argument(
        "--model",
        metavar="NAME",
        help="policy model name (default the bench script; arena/<env>/oracle for another env)",
    )
    bench.add_argument("--output-dir", type=Path, metavar="DIR", help="default outputs/bench-<stamp>")
    bench.add_argument("--no-floor", action="store_true", help="skip the docker run / docker exec floor")
    bench.add_argument("-v", "--verbose", action="store_true", help="keep the model server's per-turn log lines")
    bench.add_argument(
        "--render",
        type=Path,
        metavar="REPORT_JSON",
        help="run nothing: re-render a saved report.json (goals and capacity recomputed) into its folder",
    )
    bench.add_argument(
        "--ab",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        help="run nothing: compare two folders of runs made alternately with the same options, the i-th of each "
        "paired in start order; each figure's after/before ratio with a 95%% interval, judged against --ab-limit",
    )
    bench.add_argument(
        "--ab-limit",
        type=float,
        default=AB_LIMIT,
        metavar="FRACTION",
        help="the change --ab calls a regression (default 0.10: 10%%)",
    )
    return bench


def main(argv: Sequence[str], prog: str = "arena bench", verbose: bool = False) -> int:
    """Parse the bench's arguments and run it (argparse exits 2 on bad flags, as everywhere)."""
    args = build_parser(prog).parse_args(list(argv))
    args.verbose = args.verbose or verbose
    return handle(args)


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The BenchConfig the flags ask for (`--quick` or `--capacity` supplies defaults; explicit flags win;
    `--runtime` or `--harness` replaces a preset's pairs).

    Raises:
        PrerequisiteError: the flags do not make a valid configuration (the message names them).
    """
    base = QUICK if args.quick else CAPACITY if args.capacity else BenchConfig()
    fields = {
        "runtimes": args.runtime,
        "harnesses": args.harness,
        "pairs": args.pairs,
        "latencies": args.latency,
        "sweep": args.sweep,
        "environment": args.env,
        "toolsets": args.toolset,
        "levels": args.levels,
        "rollouts": args.rollouts,
        "image": args.image,
        "model": args.model,
        "output_dir": args.output_dir,
        "floor": False if args.no_floor else None,
    }
    chosen = {k: v for k, v in fields.items() if v is not None}
    if args.pairs is None and (args.runtime is not None or args.harness is not None):
        chosen["pairs"] = None
    try:
        return BenchConfig.model_validate({**base.model_dump(), **chosen})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors())
        raise PrerequisiteError(f"invalid bench options: {problems}") from None


def render_saved(path: Path) -> ReportPaths:
    """Re-render a saved report.json next to itself, its goals and capacity recomputed from its levels.

    Raises:
        UsageError: the file is missing or is not a bench report.
    """
    from runtime_bench.report import build_report, read_report, write_report

    saved = read_report(path)
    report = build_report(saved.meta, saved.floor, saved.configs, saved.skipped)
    report.totals.leaked = max(report.totals.leaked, saved.totals.leaked)  # late reaps are only in the saved totals
    return write_report(report, path.parent)


def require_bench_extra() -> None:
    """Fail before anything runs when the `bench` extra is not installed (a report is drawn only at the end).

    Raises:
        PrerequisiteError: a module of the extra is missing (the message gives the install command).
    """
    missing = [name for name in BENCH_EXTRA_MODULES if find_spec(name) is None]
    if missing:
        raise PrerequisiteError(
            f"arena bench needs the `bench` extra of arena-evals ({', '.join(missing)} not installed): "
            f"run `{INSTALL_BENCH}` (in a checkout, `make install` has it), then re-run"
        )


def _ab(before: Path, after: Path, limit: float) -> int:
    """Print the A/B table; exit 1 when a figure regressed beyond the limit (or the after side failed more), 2 on
    bad input."""
    from runtime_bench.ab import compare, load_reports, render

    try:
        if not 0 < limit < 1:
            raise UsageError(f"--ab-limit is a fraction between 0 and 1, got {limit}")
        outcome = compare(load_reports(before), load_reports(after), limit)
    except ArenaError as exc:
        print(f"arena bench: {exc}", file=sys.stderr)
        return 2
    if not outcome.comparisons and not outcome.failed_runs:
        print(f"arena bench: {before} and {after} share no configuration and level to compare", file=sys.stderr)
        return 2
    print(render(outcome, limit, 0.95))
    return 1 if outcome.regressed else 0


def handle(args: argparse.Namespace) -> int:
    from runtime_bench.runner import run_bench

    if args.ab is not None:  # reads saved reports only: no extra needed
        return _ab(args.ab[0], args.ab[1], args.ab_limit)
    if args.ab_limit != AB_LIMIT:
        print("arena bench: --ab-limit applies only with --ab BEFORE AFTER", file=sys.stderr)
        return 2
    try:
        require_bench_extra()
    except PrerequisiteError as exc:
        print(f"arena bench: {exc}", file=sys.stderr)
        return 2
    if args.render is not None:
        try:
            paths = render_saved(args.render)
        except ArenaError as exc:
            print(f"arena bench: {exc}", file=sys.stderr)
            return 2
        print(f"report: {paths.md} (also {paths.png.name}, {paths.capacity_png.name})")
        return 0

    if not args.verbose:
        # One INFO line per model turn would drown the per-level progress lines.
        logging.getLogger("arena.server").setLevel(logging.WARNING)
    try:
        report, paths = run_bench(config_from_args(args).plan())
    except ArenaError as exc:
        print(f"arena bench: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, PrerequisiteError) else 1
    totals = report.totals
    print(f"report: {paths.md} (also {paths.json.name}, {paths.png.name}, {paths.capacity_png.name})")
    print(f"{totals.rollouts} rollouts, {totals.failures} failed, {totals.leaked} leaked container(s)")
    return 1 if totals.failures or totals.leaked else 0
