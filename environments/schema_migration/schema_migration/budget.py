"""What a migration may spend while graded: a budget derived from the reference migration's own cost on the same database, under a hard cap.

Per held-out database (world), per phase: the migration gets `STEP_MULTIPLE` times the reference's
SQLite VM steps, but at least `QUADRATIC` steps per row squared (so a correct quadratic dedupe passes
at the default size) and `CPU_MULTIPLE` times its CPU time, at least `CPU_FLOOR_S`; reading the
result back (integrity, facts, battery, rows, the migration's own views and triggers) the same of
the reference's reads. The child's whole life is under `Limits.cpu_s` CPU seconds (RLIMIT_CPU, the
hard cap) and its files under `file_mb`, a multiple of the reference's database size. Steps make the
verdict the same on any machine; CPU seconds bound work a step can hide (one printf() building
megabytes, one sort of millions of rows).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cost", "Limits", "Spend", "file_mb", "spend"]

STEP_MULTIPLE = 50
QUADRATIC = 25
"""Steps per row squared (rows of the largest source table): a correct quadratic dedupe (a correlated
EXISTS over lower(trim(email))) takes ~7 n² steps."""
MIN_STEPS = 2_000_000
CPU_MULTIPLE = 20
CPU_FLOOR_S = 4.0
"""The quadratic dedupe above takes ~1.4 CPU-s at 2,000 rows on the development machine."""
READ_FLOOR_S = 2.5
FILE_MULTIPLE = 16
FILE_FLOOR_MB = 64


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 8
    """The hard cap: CPU seconds for the whole confined child (RLIMIT_CPU), every database and phase;
    with the host's own work (< 1 CPU-s at the default size) no grading passes ~10 CPU-s."""
    memory_mb: int = 1024
    """Address space of the child (RLIMIT_AS), in MiB; temp tables and sorts live in it too."""
    length_mb: int = 4
    """Largest string or blob SQLite may build (SQLITE_LIMIT_LENGTH), in MiB."""
    file_mb: int | None = None
    """Largest file the child may write (RLIMIT_FSIZE), in MiB; None: `file_mb(reference size)`."""
    steps: int | None = None
    """SQLite VM steps the migration may take per database; None: from the reference (`spend`)."""
    read_steps: int | None = None
    """SQLite VM steps for reading one database back; None: from the reference."""
    cpu_budget_s: float | None = None
    """CPU seconds for the migration per database; None: from the reference."""
    wall_s: float = 120.0
    """Backstop only: wall-clock seconds before the child is presumed hung and killed."""


@dataclass(frozen=True)
class Cost:
    """What the reference migration and the reads of its result took on one database."""

    steps: int
    read_steps: int
    cpu_s: float
    read_cpu_s: float
    file_bytes: int
    rows: int
    """Rows in the largest source table."""


@dataclass(frozen=True)
class Spend:
    steps: int
    read_steps: int
    cpu_s: float
    read_cpu_s: float

    def request(self) -> dict[str, float]:
        return {"steps": self.steps, "read_steps": self.read_steps, "cpu_s": self.cpu_s, "read_cpu_s": self.read_cpu_s}


def spend(cost: Cost, limits: Limits) -> Spend:
    """The budget of one database, from the reference's `cost` (explicit `limits` win)."""
    floor = max(MIN_STEPS, QUADRATIC * cost.rows**2)
    steps = max(floor, STEP_MULTIPLE * cost.steps)
    read_steps = max(floor, STEP_MULTIPLE * cost.read_steps)
    cpu = max(CPU_FLOOR_S, CPU_MULTIPLE * cost.cpu_s)
    read_cpu = max(READ_FLOOR_S, CPU_MULTIPLE * cost.read_cpu_s)
    return Spend(
        limits.steps if limits.steps is not None else steps,
        limits.read_steps if limits.read_steps is not None else read_steps,
        min(limits.cpu_budget_s if limits.cpu_budget_s is not None else cpu, float(limits.cpu_s)),
        min(read_cpu, float(limits.cpu_s)),
    )


def file_mb(reference_bytes: int, limits: Limits) -> int:
    """The file-size limit: `FILE_MULTIPLE` times the reference's largest database, at least `FILE_FLOOR_MB`."""
    if limits.file_mb is not None:
        return limits.file_mb
    return max(FILE_FLOOR_MB, -(-FILE_MULTIPLE * reference_bytes // 2**20))
