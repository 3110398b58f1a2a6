"""What `arena <command> --help` says besides the flags: what the command does, examples, and its
exit codes (kept apart from the parser so `arena/cli.py` reads as the commands' flags and dispatch)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = ["EXIT_CODES", "HELP", "Help", "add_command"]

EXIT_CODES = """exit codes: 0 success; 1 the run or the gate failed (episodes that errored count);
2 a usage, input, configuration or prerequisite error (one line, no traceback);
3 undecided (probe, compare --fail-if-worse: too few tasks to decide; run more);
70 an internal error (a bug: the traceback is written to a log named on stderr);
130 Ctrl-C (129 SIGHUP, 143 SIGTERM: running evals are stopped and their boxes reaped first)."""


@dataclass(frozen=True)
class Help:
    summary: str
    """One line, in `arena --help`'s list."""
    description: str
    examples: tuple[str, ...]
    exits: str = ""
    """Exit codes particular to the command ('' : the general ones)."""


HELP = {
    "images": Help(
        "build the Docker images (no registry needed), publish them, or write a standalone context",
        "Build, publish or export Arena's images.",
        ("arena images build", "arena images build --rebuild base"),
    ),
    "images build": Help(
        "build images (content-hash cached: unchanged = no-op)",
        "Build base, harness, network and one image per installed environment from Debian packages, PyPI and npm; "
        "tags are content hashes, so an unchanged build does nothing.",
        ("arena images build", "arena images build fault-localisation --rebuild"),
    ),
    "images publish": Help(
        "push the environment images to a registry; lock name → digest",
        "Push the environment images and lock each by digest in configs/images.lock.json, "
        "where the prime configs (configs/<harness>-prime.toml) read them.",
        (
            "arena images publish --registry ghcr.io/you",
            "arena images publish --registry 127.0.0.1:5000/arena --env schema-migration",
        ),
    ),
    "images context": Help(
        "write a self-contained Dockerfile context (FROM public Debian) for Prime's builder",
        "Write a Dockerfile context a builder without Arena's images can build.",
        ("arena images context --env fault-localisation --out ctx/",),
    ),
    "serve": Help(
        "serve the scripted-policy model (chat, responses, messages)",
        "Serve the scripted policies as a model: the model name picks the policy (arena/<env>/<policy>).",
        ("arena serve", "arena serve --port 9000"),
    ),
    "demo": Help(
        "the main job on the embedded default: build images, run a small eval",
        "Build the images, start the model server, run oracle and staller on 3 tasks per environment, print "
        "per-episode progress, then the table.",
        ("arena demo", "arena demo --harness claude_code --skip-build", "arena demo --resume"),
        "1: an episode failed or an eval produced none.",
    ),
    "bench": Help("runtime_bench: wall clock and CPU per rollout under concurrency, against the docker floor", "", ()),
    "reap": Help(
        "remove containers Arena started (labelled arena.managed=true)",
        "Remove Arena's containers and nothing else.",
        ("arena reap --run fault-localisation-oracle-bash-dev", "arena reap --all"),
    ),
    "probe": Help(
        "the degenerate-policy gate: every scripted policy through a real harness",
        "Run every scripted policy of each environment through a real harness in docker, show per-episode progress, "
        "print the table and check the gate's rules.",
        (
            "arena probe",
            "arena probe fault-localisation --tasks 50 --split dev",
            "arena probe --policies 'shortcut_*' --resume",
        ),
        "1: a rule of the gate failed, or an episode failed; 3: no rule failed but one is undecided "
        "(its bound cannot decide it at this many tasks: run more).",
    ),
    "new-env": Help(
        "write a new environment package on Arena's contract, ready to install and probe",
        "Write a runnable environment package: its Environment declaration, a taskset on the contract, an MCP "
        "toolset, a pure seeded generator and grader, scripted policies (oracle, exhaustive, a shortcut), an "
        "offline adversary, its image and tests. A bad or clashing NAME, or an existing folder, writes nothing.",
        ("arena new-env demo-env", "arena new-env demo-env --dir /tmp/demo_env"),
        "2: NAME is not an id, clashes with an installed environment, a module or a distribution, or DIR exists.",
    ),
    "audit": Help(
        "report every tool-result rewrite and denial of a run",
        "Count every rewrite and denial of a run by rule, harness, environment and task, over the rollouts it read; "
        "print the report, and write audit.md and audit.json when --out is given.",
        (
            "arena audit outputs/demo-fault-localisation-oracle-bash-20260101-120000",
            "arena audit outputs/probe-20260101-120000/fault-localisation-oracle-bash-dev --out reports/",
        ),
    ),
    "compare": Help(
        "each run against a baseline on their shared tasks: exact paired test, its interval, Holm",
        "B − A on the tasks both runs scored, for each run B against the baseline A: the one means, the paired "
        "test (exact sign-flip, McNemar for 0/1), its interval, wins, losses and ties; Holm's adjustment over "
        "several runs; a planning figure from an assumed spread.",
        (
            "arena compare outputs/run-a outputs/run-b",
            "arena compare outputs/base outputs/b1 outputs/b2 --json",
            "arena compare outputs/main outputs/pr --fail-if-worse 0.05",
        ),
        "with --fail-if-worse DELTA: 1 a run is shown worse than the baseline by more than DELTA; "
        "3 undecided (too few tasks to tell); 0 every run shown within DELTA.",
    ),
    "view": Help(
        "browse runs, episodes and transcripts in a browser; compare runs",
        "Serve a local viewer of runs (it follows runs still going), or export it as one HTML file that opens "
        "from file:// with no network.",
        (
            "arena view outputs/",
            "arena view outputs/probe-* --port 0",
            "arena view outputs/demo-* --export report.html",
        ),
    ),
}


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, **kwargs: object
) -> argparse.ArgumentParser:
    """A subcommand's parser with its summary, description, examples and exit codes."""
    text = HELP[name]
    examples = "\n".join(f"  {line}" for line in text.examples)
    epilog = (f"examples:\n{examples}\n\n" if examples else "") + EXIT_CODES + (f"\n{text.exits}" if text.exits else "")
    return sub.add_parser(
        name.split()[-1],
        help=text.summary,
        description=text.description or None,
        epilog=epilog if text.description else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,  # type: ignore[arg-type]
    )
