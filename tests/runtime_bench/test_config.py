"""Which configurations a bench runs, and the flags that choose them."""

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from arena.errors import PrerequisiteError
from runtime_bench.cli import build_parser, config_from_args
from runtime_bench.config import CAPACITY, QUICK, BenchConfig, Combo


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_default_bench_runs_every_harness_on_both_docker_paths_with_the_shared_toolset():
    config = BenchConfig()
    plan = config.plan()
    harnesses = ["bash", "arena-bash", "claude_code", "codex", "arena-codex"]
    assert [c.label for c in plan.combos] == [
        *(f"docker/{h}/arena-bench/shared" for h in harnesses),
        *(f"docker-lean/{h}/arena-bench/shared" for h in harnesses),
    ]
    assert config.latencies == [0.0] and plan.floor
    assert config.levels == [1, 2, 4, 8, 16, 32]
    assert plan.docker_image == plan.images["docker"] == plan.images["docker-lean"] == "arena/harness:latest"
    assert plan.model == "arena/bench" and plan.bench


def test_a_level_runs_at_least_as_many_rollouts_as_its_concurrency():
    plan = BenchConfig(rollouts=4, levels=[1, 8]).plan()
    assert plan.rollouts_at == {1: 4, 8: 8}


def test_container_only_harnesses_are_skipped_on_subprocess_with_the_reason():
    plan = BenchConfig(runtimes=["docker", "subprocess"], harnesses=["bash", "codex"]).plan()
    assert Combo("subprocess", "bash", "arena-bench", "shared") in plan.combos
    assert Combo("subprocess", "codex", "arena-bench", "shared") not in plan.combos
    [skipped] = plan.skipped
    assert skipped.harness == "codex" and "NEEDS_CONTAINER" in skipped.reason
    assert plan.images == {"docker": "arena/harness:latest", "subprocess": None}


def test_nothing_runnable_is_refused_with_what_to_add():
    with pytest.raises(ValueError, match="add --runtime docker"):
        BenchConfig(runtimes=["subprocess"], harnesses=["claude_code"])


def test_another_environment_uses_its_own_image_policy_and_toolset_placement():
    plan = BenchConfig(environment="fault-localisation", toolsets=["shared", "task"]).plan()
    assert plan.docker_image == "arena/fault-localisation:latest" and not plan.bench
    assert plan.model == "arena/fault-localisation/oracle"
    assert {c.toolset for c in plan.combos} == {"env"}
    # its docker path is its own `[env] docker` (lean): the stock path is skipped, with why
    assert {c.runtime for c in plan.combos} == {"docker-lean"}
    assert plan.skipped and all(s.runtime == "docker" and "bench it as docker-lean" in s.reason for s in plan.skipped)


def test_quick_is_stock_bash_against_lean_arena_bash_without_and_with_the_pool_at_the_goal_levels():
    assert [(c.runtime, c.harness) for c in QUICK.plan().combos] == [
        ("docker", "bash"),
        ("docker-lean", "arena-bash"),
        ("docker-pool", "arena-bash"),
    ]
    assert QUICK.levels == [1, 8] and QUICK.latencies == [0.0]


def test_quick_supplies_defaults_and_explicit_flags_win():
    assert config_from_args(_args("--quick")) == QUICK
    config = config_from_args(_args("--quick", "--levels", "1,2", "-k", "2", "--toolset", "shared,task"))
    assert config.levels == [1, 2] and config.rollouts == 2
    assert [(c.runtime, c.harness, c.toolset) for c in config.plan().combos] == [
        ("docker", "bash", "shared"),
        ("docker", "bash", "task"),
        ("docker-lean", "arena-bash", "shared"),
        ("docker-lean", "arena-bash", "task"),
        ("docker-pool", "arena-bash", "shared"),
        ("docker-pool", "arena-bash", "task"),
    ]
    # --runtime / --harness replace a preset's pairs with their cross product
    config = config_from_args(_args("--quick", "--runtime", "docker-lean", "--harness", "bash"))
    assert [(c.runtime, c.harness) for c in config.plan().combos] == [("docker-lean", "bash")]


def test_capacity_runs_each_harness_on_the_lean_path_and_arena_bash_pooled_at_two_latencies():
    config = config_from_args(_args("--capacity", "--sweep", "500"))
    assert config.sweep == 500 and config.latencies == [2.0, 10.0] and config.levels == CAPACITY.levels
    assert {(c.runtime, c.harness, c.latency) for c in config.plan().combos} == {
        ("docker-lean", h, latency) for h in ("arena-bash", "claude_code", "codex") for latency in (2.0, 10.0)
    } | {("docker-pool", "arena-bash", latency) for latency in (2.0, 10.0)}
    [combo] = [c for c in config.plan().combos if c.harness == "codex" and c.latency == 10.0]
    assert combo.label == "docker-lean/codex/arena-bench/shared@10s" and combo.slug == "docker-lean-codex-shared-l10"
    # every level's rollouts fill it once: the whole run must fit ~20 minutes on 2 cores
    assert sum(config.plan().rollouts_at.values()) <= 2 + 8 + 32


def test_latency_and_pairs_flags_make_configurations():
    config = config_from_args(_args("--pairs", "docker/bash,docker-lean/arena-bash", "--latency", "0,2.5"))
    assert [(c.runtime, c.harness, c.latency) for c in config.plan().combos] == [
        ("docker", "bash", 0.0),
        ("docker-lean", "arena-bash", 0.0),
        ("docker", "bash", 2.5),
        ("docker-lean", "arena-bash", 2.5),
    ]
    assert Combo("docker", "bash", "arena-bench", "shared").label == "docker/bash/arena-bench/shared"


def test_invalid_flags_are_a_prerequisite_error_naming_the_field():
    with pytest.raises(PrerequisiteError, match="harnesses"):
        config_from_args(_args("--harness", "vim"))
    with pytest.raises(PrerequisiteError, match="levels"):
        config_from_args(_args("--levels", "0"))
    with pytest.raises(PrerequisiteError, match="latencies must be seconds"):
        config_from_args(_args("--latency", "-2"))
    with pytest.raises(PrerequisiteError, match="is not runtime/harness"):
        config_from_args(_args("--pairs", "docker-fast/bash"))
    with pytest.raises(SystemExit):  # argparse: the presets exclude each other
        _args("--quick", "--capacity")


@pytest.mark.slow
def test_prime_without_a_key_exits_2_and_says_what_is_missing_without_a_traceback():
    env = {k: v for k, v in __import__("os").environ.items() if k != "PRIME_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "bench", "--runtime", "prime", "--harness", "bash"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "PRIME_API_KEY" in done.stderr and "--image" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_bench_decides_once_the_runner_and_the_evals_read_the_plan_never_the_config():
    """Only the flags' parser (and the package's exports) name `BenchConfig` beside its own module: the
    runner used to read the config 21 times, re-deriving combinations, images and the policy as it went."""
    import runtime_bench

    def names_config(path: Path) -> bool:
        nodes = ast.walk(ast.parse(path.read_text()))
        return any(
            (isinstance(n, ast.Name) and n.id == "BenchConfig")
            or (isinstance(n, ast.alias) and n.name == "BenchConfig")
            for n in nodes
        )

    package = Path(runtime_bench.__file__).parent
    assert {path.name for path in package.glob("*.py") if names_config(path)} == {"__init__.py", "cli.py", "config.py"}
