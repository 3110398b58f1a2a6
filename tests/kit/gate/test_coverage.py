"""The coverage check (seeded, fast): every cell of the issue's grid covers at ≥ 0.93 and the paired
test's false-positive rate is ≤ 5 %, allowing for Monte-Carlo error. The docs' table is the same
grid at 4,000 runs per cell (`python -m arena_kit.gate.coverage`)."""

import pytest

from arena_kit.gate.coverage import KINDS, MEANS, ROLLOUTS, TASKS, markdown, run_grid

RUNS = 400
CONFIDENCE = 0.999
"""A cell fails only when its runs show, at this confidence, a coverage below 0.93 (a rate above 5 %)."""


@pytest.fixture(scope="module")
def grid():
    return run_grid(runs=RUNS, seed=0)


def test_the_grid_is_the_issues(grid):
    assert {(c.mean, c.tasks, c.rollouts, c.kind) for c in grid} == {
        (m, n, k, kind) for m in MEANS for n in TASKS for k in ROLLOUTS for kind in KINDS
    }
    assert MEANS == (0.02, 0.1, 0.5, 0.9, 0.98) and TASKS == (5, 10, 20, 50, 200) and ROLLOUTS == (1, 3)


def test_every_cell_covers_at_least_093(grid):
    from arena_kit.gate.bounds import cp_upper

    short = [
        (c.mean, c.tasks, c.rollouts, c.kind, c.coverage)
        for c in grid
        if cp_upper(c.covered, c.runs, 1 - CONFIDENCE) < 0.93
        or cp_upper(min(c.lower_held, c.upper_held), c.runs, 1 - CONFIDENCE) < 0.93
    ]
    assert not short, short


def test_the_paired_false_positive_rate_is_at_most_5_percent(grid):
    from arena_kit.gate.bounds import cp_lower

    high = [
        (c.mean, c.tasks, c.rollouts, c.kind, c.false_positive_rate)
        for c in grid
        if cp_lower(c.false_positives, c.runs, 1 - CONFIDENCE) > 0.05
    ]
    assert not high, high
    pooled = sum(c.false_positives for c in grid) / sum(c.runs for c in grid)
    assert pooled <= 0.05


def test_an_interval_that_under_covers_fails_the_check():
    # The clustered t interval Arena printed before: zero width at zero spread, so at a true mean
    # of 0.98 with 10 tasks it covers about 40 % of runs.
    import numpy as np
    from scipy.special import stdtrit

    from arena_kit.gate.bounds import cp_upper
    from arena_kit.gate.coverage import simulate

    x, _ = simulate(np.random.default_rng(0), 0.98, 10, 1, "0/1", RUNS)
    half = stdtrit(9, 0.975) * x.std(axis=1, ddof=1) / np.sqrt(10)
    covered = int(((x.mean(axis=1) - half <= 0.98) & (0.98 <= x.mean(axis=1) + half)).sum())
    assert cp_upper(covered, RUNS, 1 - CONFIDENCE) < 0.93


def test_the_table_has_a_row_per_mean_and_task_count(grid):
    table = markdown(grid)
    assert table.count("\n| 0.") == len(MEANS) * len(TASKS) and "Lowest coverage" in table


@pytest.mark.slow
def test_the_docs_table_is_what_the_script_prints():
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "viewing.md").read_text()
    [block] = re.findall(r"<!-- coverage:start -->\n(.*?)\n<!-- coverage:end -->", docs, re.S)
    assert block == markdown(run_grid(runs=4000, seed=0))
