"""`python -m schema_migration.mutants`: the mutation sweep of the grader; exits 1 if a non-equivalent mutant survives."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from arena_kit.adversaries.mutation.adequacy import adequate, survivors, table, tally
from arena_kit.adversaries.mutation.equivalence import markdown
from arena_kit.adversaries.mutation.sweep import Outcome
from schema_migration.families import BY_NAME
from schema_migration.mutants.equivalent import EQUIVALENT, is_equivalent
from schema_migration.mutants.sweep import family_seeds, sweep

__all__ = ["equivalents_table", "main"]


def equivalents_table() -> str:
    return markdown(EQUIVALENT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schema_migration.mutants", description=__doc__)
    parser.add_argument(
        "--split", action="append", choices=("train", "dev", "test"), help="repeatable; default dev and test"
    )
    parser.add_argument("--per-family", type=int, default=3, help="tasks per family and split (default 3)")
    parser.add_argument("--family", action="append", choices=sorted(BY_NAME), help="repeatable; default every family")
    parser.add_argument("--jobs", type=int, default=2, help="tasks graded at once (default 2)")
    parser.add_argument("--by", choices=("family", "operator"), action="append", help="table rows (default both)")
    parser.add_argument("--json", metavar="PATH", help="also write every outcome (seed, key, score, stage) to PATH")
    parser.add_argument("--equivalents", action="store_true", help="print the equivalence table (markdown) and exit")
    args = parser.parse_args(argv)
    if args.equivalents:
        print(equivalents_table())
        return 0
    started = time.monotonic()
    task_seeds = [
        seed for split in args.split or ["dev", "test"] for seed in family_seeds(split, args.per_family, args.family)
    ]
    outcomes: list[Outcome] = []
    for k, task in enumerate(sweep(task_seeds, args.jobs), 1):
        outcomes += task
        if task:
            print(
                f"[{k}/{len(task_seeds)}] seed {task[0].seed} {task[0].family}: {len(task)} mutants",
                file=sys.stderr,
                flush=True,
            )
    if args.json:
        rows = [
            {k: v for k, v in o.__dict__.items() if k != "answer"} | {"equivalent": is_equivalent(o)} for o in outcomes
        ]
        Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    tallies = tally(outcomes, is_equivalent)
    for by in args.by or ["family", "operator"]:
        print(table(tallies, by), end="\n\n")
    left = survivors(tallies)
    for o in left:
        print(f"SURVIVOR seed {o.seed} {o.family} score {o.score:.3f}: {o.key}")
    print(
        f"{len(task_seeds)} tasks, {len(outcomes)} mutants, {len(left)} non-equivalent survivors, {time.monotonic() - started:.0f} s wall"
    )
    return 0 if adequate(tallies) else 1


if __name__ == "__main__":
    sys.exit(main())
