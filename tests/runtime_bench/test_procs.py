"""One /proc scan serves the daemon CPU and a process tree's CPU."""

import os

from runtime_bench.procs import ProcStat, daemon_cpu_seconds, scan, tree_cpu_seconds


def test_the_scan_sees_this_process_with_its_parent_and_name():
    me = scan()[os.getpid()]
    assert me.ppid == os.getppid() and me.comm and me.own_s > 0


def test_a_tree_adds_its_live_descendants_and_a_vanished_root_is_none():
    table = {
        1: ProcStat(pid=1, comm="vf-eval", ppid=0, own_s=1.0, reaped_s=0.5),
        2: ProcStat(pid=2, comm="python", ppid=1, own_s=2.0, reaped_s=0.0),
        3: ProcStat(pid=3, comm="sleep", ppid=2, own_s=0.25, reaped_s=0.0),
        4: ProcStat(pid=4, comm="other", ppid=0, own_s=9.0, reaped_s=0.0),
    }
    assert tree_cpu_seconds(1, table) == 3.75
    assert tree_cpu_seconds(99, table) is None


def test_daemon_cpu_counts_dockerd_and_containerd_only():
    table = {
        1: ProcStat(pid=1, comm="dockerd", ppid=0, own_s=1.5, reaped_s=7.0),
        2: ProcStat(pid=2, comm="containerd", ppid=0, own_s=0.5, reaped_s=0.0),
        3: ProcStat(pid=3, comm="containerd-shim", ppid=0, own_s=4.0, reaped_s=0.0),
    }
    assert daemon_cpu_seconds(table) == 2.0
    assert daemon_cpu_seconds({}) is None
