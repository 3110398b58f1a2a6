"""Host CPU from /proc, scanned one way: every process's name, parent and CPU ticks in one pass.

Two readers share the scan: the Docker daemons' CPU (machine-wide, so other work on the host adds
to it) and a process tree's CPU (vf-eval, the children it reaped, and its live descendants).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DAEMONS", "ProcStat", "daemon_cpu_seconds", "scan", "tree_cpu_seconds"]

DAEMONS = ("dockerd", "containerd")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    comm: str
    ppid: int
    own_s: float
    """utime + stime."""
    reaped_s: float
    """cutime + cstime: the children this process has waited for."""


def scan(proc: Path = Path("/proc")) -> dict[int, ProcStat]:
    """Every readable process (one that ends mid-scan is left out)."""
    ticks = os.sysconf("SC_CLK_TCK")
    table: dict[int, ProcStat] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        # `comm` is in parentheses and may itself hold spaces or parentheses: split at the last one.
        head, _, rest = text.rpartition(")")
        fields = rest.split()
        pid = int(entry.name)
        table[pid] = ProcStat(
            pid=pid,
            comm=head.partition("(")[2],
            ppid=int(fields[1]),
            own_s=(int(fields[11]) + int(fields[12])) / ticks,
            reaped_s=(int(fields[13]) + int(fields[14])) / ticks,
        )
    return table


def daemon_cpu_seconds(table: dict[int, ProcStat] | None = None) -> float | None:
    """utime + stime of every dockerd and containerd process (None when none is visible)."""
    daemons = [p.own_s for p in (scan() if table is None else table).values() if p.comm in DAEMONS]
    return sum(daemons) if daemons else None


def tree_cpu_seconds(pid: int, table: dict[int, ProcStat] | None = None) -> float | None:
    """CPU-seconds so far of `pid`, the children it reaped, and its live descendants (None: gone)."""
    table = scan() if table is None else table
    if pid not in table:
        return None
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    total, todo = 0.0, [pid]
    while todo:
        current = table[todo.pop()]
        total += current.own_s + current.reaped_s
        todo += children.get(current.pid, [])
    return total
