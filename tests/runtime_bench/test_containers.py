"""Finding a container's cgroup counters under cgroup v1 and v2 layouts (no engine needed)."""

from runtime_bench.containers import _read_cpu, cgroup_files


def test_cgroup_v1_counters_are_found_under_the_cgroupfs_docker_parent(tmp_path):
    cpu = tmp_path / "cpuacct" / "docker" / "abc" / "cpuacct.usage"
    cpu.parent.mkdir(parents=True)
    cpu.write_text("2500000000\n")
    cpu_file, mem_file, kind = cgroup_files("abc", root=tmp_path)
    assert (cpu_file, kind) == (cpu, "v1")
    assert mem_file == tmp_path / "memory" / "docker" / "abc" / "memory.max_usage_in_bytes"
    assert _read_cpu(cpu_file, kind) == 2.5


def test_cgroup_v2_counters_are_found_under_the_systemd_scope(tmp_path):
    scope = tmp_path / "system.slice" / "docker-abc.scope"
    scope.mkdir(parents=True)
    (scope / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    (scope / "memory.peak").write_text("1048576\n")
    cpu_file, mem_file, kind = cgroup_files("abc", root=tmp_path)
    assert (kind, mem_file) == ("v2", scope / "memory.peak")
    assert _read_cpu(cpu_file, kind) == 1.5


def test_a_container_without_a_cgroup_has_no_counters(tmp_path):
    assert cgroup_files("gone", root=tmp_path) == (None, None, "")
