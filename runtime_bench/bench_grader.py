"""Benchmark: schema-migration grading time per family on N held-out rows (goal: < 2 s at 100k).

Not a test. Run `python runtime_bench/bench_grader.py [--rows 100000] [--repeat 3]`. For each
family it grades the reference migration of one dev task and reports the median wall time of
generating the held-out rows and of `grade()` given those rows (the child builds the DB and runs
the migration while the parent computes the reference rows; then reflection and row comparison),
their sum, and the CPU seconds `grade()` used in this process and in its child.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

from schema_migration.families import FAMILIES, BY_NAME
from schema_migration import heldout
from schema_migration.generate import SPLITS, spec
from schema_migration.grade import grade


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _seed_for(family_index: int) -> int:
    start = SPLITS["dev"].start
    return start + (family_index - start) % len(FAMILIES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="held-out rows in the main table")
    parser.add_argument("--repeat", type=int, default=3, help="runs per family (median reported)")
    args = parser.parse_args(argv)
    print(
        f"{'family':<22}{'rows':>9}{'generate s':>12}{'grade s':>10}{'total s':>10}{'cpu parent':>12}{'cpu child':>11}  score"
    )
    worst = 0.0
    for k, family in enumerate(FAMILIES):
        s = spec(_seed_for(k))
        assert s.family == family.name
        gen_times, grade_times, parent_cpu, child_cpu = [], [], [], []
        result = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            rows = heldout.rows(s, args.rows)
            t1, c1, k1 = time.perf_counter(), time.process_time(), _child_cpu()
            result = grade(BY_NAME[s.family].migration(s.params), s, rows)
            t2 = time.perf_counter()
            parent_cpu.append(time.process_time() - c1)
            child_cpu.append(_child_cpu() - k1)
            gen_times.append(t1 - t0)
            grade_times.append(t2 - t1)
        total_rows = sum(len(r) for r in rows.values())
        gen, gr = statistics.median(gen_times), statistics.median(grade_times)
        worst = max(worst, gen + gr)
        cpu = f"{statistics.median(parent_cpu):>12.3f}{statistics.median(child_cpu):>11.3f}"
        print(
            f"{family.name:<22}{total_rows:>9}{gen:>12.3f}{gr:>10.3f}{gen + gr:>10.3f}{cpu}  {result.score if result else '-'}"
        )
    print(f"worst total: {worst:.3f} s (goal < 2 s)")
    return 0 if worst < 2 else 1


if __name__ == "__main__":
    sys.exit(main())
