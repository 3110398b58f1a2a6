"""Which configurations a bench runs, and the flags that choose them."""

import argparse
import subprocess
import sys

import pytest

from arena.errors import PrerequisiteError
from runtime_bench.cli import build_parser, config_from_args
from runtime_bench.config import QUICK, BenchConfig, Combo


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_default_bench_runs_every_harness_on_docker_with_the_shared_toolset():
    config = BenchConfig()
    assert [c.label for c in config.combos()] == [
        "docker/bash/arena-bench/shared",
        "docker/arena-bash/arena-bench/shared",
        "docker/claude_code/arena-bench/shared",
        "docker/codex/arena-bench/shared",
        "docker/arena-codex/arena-bench/shared",
    ]
    assert config.levels == [1, 2, 4, 8, 16, 32]
    assert config.image_for("docker") == "arena/harness:latest"
    assert config.model_name() == "arena/bench"


def test_a_level_runs_at_least_as_many_rollouts_as_its_concurrency():
    config = BenchConfig(rollouts=4, levels=[1, 8])
    assert config.rollouts_at(1) == 4
    assert config.rollouts_at(8) == 8


def test_container_only_harnesses_are_skipped_on_subprocess_with_the_reason():
    config = BenchConfig(runtimes=["docker", "subprocess"], harnesses=["bash", "codex"])
    assert Combo("subprocess", "bash", "arena-bench", "shared") in config.combos()
    assert Combo("subprocess", "codex", "arena-bench", "shared") not in config.combos()
    [skipped] = config.skipped()
    assert skipped["harness"] == "codex" and "NEEDS_CONTAINER" in skipped["reason"]


def test_nothing_runnable_is_refused_with_what_to_add():
    with pytest.raises(ValueError, match="add --runtime docker"):
        BenchConfig(runtimes=["subprocess"], harnesses=["claude_code"])


def test_another_environment_uses_its_own_image_policy_and_toolset_placement():
    config = BenchConfig(environment="fault-localisation", toolsets=["shared", "task"])
    assert config.image_for("docker") == "arena/fault-localisation:latest"
    assert config.model_name() == "arena/fault-localisation/oracle"
    assert {c.toolset for c in config.combos()} == {"env"}


def test_quick_supplies_defaults_and_explicit_flags_win():
    assert config_from_args(_args("--quick")) == QUICK
    config = config_from_args(_args("--quick", "--levels", "1,2", "-k", "2", "--toolset", "shared,task"))
    assert config.harnesses == ["bash", "arena-bash"] and config.levels == [1, 2] and config.rollouts == 2
    assert [(c.harness, c.toolset) for c in config.combos()] == [
        ("bash", "shared"), ("bash", "task"), ("arena-bash", "shared"), ("arena-bash", "task")]


def test_invalid_flags_are_a_prerequisite_error_naming_the_field():
    with pytest.raises(PrerequisiteError, match="harnesses"):
        config_from_args(_args("--harness", "vim"))
    with pytest.raises(PrerequisiteError, match="levels"):
        config_from_args(_args("--levels", "0"))


def test_prime_without_a_key_exits_2_and_says_what_is_missing_without_a_traceback():
    env = {k: v for k, v in __import__("os").environ.items() if k != "PRIME_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "--runtime", "prime", "--harness", "bash"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert "PRIME_API_KEY" in done.stderr and "--image" in done.stderr
    assert "Traceback" not in done.stderr
