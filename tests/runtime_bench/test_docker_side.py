"""The docker side's CPU: a cgroup holding the daemons counts the shims and runc a /proc scan misses."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from arena_kit.runtimes.lean_docker.engine import exec_sync as _exec_sync
from runtime_bench import docker_side
from runtime_bench.procs import ProcStat, daemon_cpu_seconds, scan

DAEMONS = {
    7: ProcStat(pid=7, comm="dockerd", ppid=1, own_s=1.0, reaped_s=0.0),
    8: ProcStat(pid=8, comm="containerd", ppid=1, own_s=1.0, reaped_s=0.0),
    9: ProcStat(pid=9, comm="containerd-shim", ppid=1, own_s=1.0, reaped_s=0.0),
    10: ProcStat(pid=10, comm="python", ppid=1, own_s=1.0, reaped_s=0.0),
}


@pytest.fixture(autouse=True)
def forget_the_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(docker_side, "_enlisted", None)
    monkeypatch.setattr(docker_side, "_origins", {})
    origin = tmp_path / "where-they-were"
    origin.mkdir()
    monkeypatch.setattr(docker_side, "_cgroup_of", lambda pid, root, group: origin)


def test_v1_moves_the_daemons_and_shims_and_reads_cpuacct_usage(tmp_path: Path) -> None:
    group = tmp_path / "cpuacct" / docker_side.GROUP
    group.mkdir(parents=True)
    (group / "cpuacct.usage").write_text("2500000000\n")
    enlisted = docker_side.enlist(tmp_path, DAEMONS)
    assert enlisted == docker_side.DockerSideGroup(group, v2=False)
    assert (group / "cgroup.procs").read_text() == "9"  # one write per process (a plain file keeps the last)
    assert docker_side.cpu_seconds(DAEMONS) == 2.5
    assert docker_side.scope().endswith("(cgroup)")
    (group / "cpuacct.usage").unlink()
    assert docker_side.cpu_seconds(DAEMONS) is None  # never the /proc figure in its place
    docker_side.release()
    assert (tmp_path / "where-they-were" / "cgroup.procs").read_text() == "9"
    assert docker_side.cpu_seconds(DAEMONS) == 2.0 and "not counted" in docker_side.scope()


def test_v2_reads_usage_usec(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    group = tmp_path / docker_side.GROUP
    group.mkdir()
    (group / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    assert docker_side.enlist(tmp_path, DAEMONS) == docker_side.DockerSideGroup(group, v2=True)
    assert docker_side.cpu_seconds(DAEMONS) == 1.5


def test_without_a_usable_group_the_daemons_come_from_proc_and_the_scope_says_so(tmp_path: Path) -> None:
    assert docker_side.enlist(tmp_path / "no-cgroupfs", DAEMONS) is None
    (tmp_path / "cpuacct").mkdir()
    assert docker_side.enlist(tmp_path, {10: DAEMONS[10]}) is None  # no daemon to move
    assert docker_side.enlist(tmp_path, DAEMONS) is None  # made, but no usage to read
    assert docker_side.cpu_seconds(DAEMONS) == daemon_cpu_seconds(DAEMONS) == 2.0
    assert "not counted" in docker_side.scope()


@pytest.mark.docker
def test_an_exec_costs_the_docker_side_its_runc_call_which_the_daemons_alone_do_not_show(
    images: dict[str, str], monkeypatch: pytest.MonkeyPatch, daemons_cgroup: None
) -> None:
    monkeypatch.undo()  # the real cgroups
    monkeypatch.setattr(docker_side, "_origins", {})
    group = docker_side.enlist()
    assert group is not None, "this machine's cgroupfs should take the daemons (root, cgroup v1 or v2)"
    client = docker.from_env()
    box = client.containers.run(
        images["harness"],
        ["sleep", "300"],
        entrypoint=[],
        detach=True,
        labels={"arena.managed": "true", "arena.session": "test-docker-side"},
    )
    try:
        calls = 20
        side, daemons = docker_side.cpu_seconds(), daemon_cpu_seconds()
        for _ in range(calls):
            assert _exec_sync(client.api, box.id, ["true"], {}, None, None, None)[0] == 0
        side_per_exec = (docker_side.cpu_seconds() - side) / calls  # type: ignore[operator]
        daemons_per_exec = (daemon_cpu_seconds() - daemons) / calls  # type: ignore[operator]
    finally:
        box.remove(force=True)
        docker_side.release()
    dockerd = next(p for p, stat in scan().items() if stat.comm == "dockerd")
    assert f"{docker_side.GROUP}" not in Path(f"/proc/{dockerd}/cgroup").read_text()  # put back
    # runc exec alone is ~10-25 ms of CPU; the daemons' own share of an exec is a few ms.
    assert side_per_exec > daemons_per_exec + 0.005, (side_per_exec, daemons_per_exec)
