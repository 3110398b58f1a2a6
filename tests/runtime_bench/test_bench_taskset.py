"""The bench taskset takes either docker path: its env is Arena's `LeanEnv`, and the taskset option
`docker` (what a bench level sets) picks lean or stock."""

import asyncio
from types import SimpleNamespace

import pytest
from verifiers.v1.utils.loaders import env_config_type, environment_class

from arena_kit.envs.lean import LeanEnv
from runtime_bench.config import BenchConfig, Combo
from runtime_bench.evals import BENCH_TASKSET_PATH, _request


@pytest.fixture(autouse=True)
def _bench_taskset_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH_TASKSET_PATH))


@pytest.mark.parametrize(("option", "path"), [(None, "lean"), ("stock", "stock"), ("lean", "lean")])
def test_the_taskset_option_picks_the_docker_path_of_a_lean_env(option, path):
    env_class = environment_class("arena-bench")
    assert issubclass(env_class, LeanEnv)
    taskset = {"id": "arena-bench", **({"docker": option} if option else {})}
    env = env_class(env_config_type("arena-bench").model_validate({"taskset": taskset}))
    assert env.config.docker == path


@pytest.mark.parametrize(("runtime", "path"), [("docker", "stock"), ("docker-lean", "lean")])
def test_a_bench_level_asks_for_its_path_with_no_egress_and_its_latency_in_the_deadline(tmp_path, runtime, path):
    plan = BenchConfig(pairs=[f"{runtime}/bash"], rollout_timeout=10).plan()
    request = _request(plan, Combo(runtime, "bash", "arena-bench", "shared", 30.0), 1, 2, "run", tmp_path, "http://x")
    assert request.taskset_args == {"num_tasks": 2, "task": {"toolset": "shared"}, "docker": path}
    assert request.runtime_args == {"allow": []}
    quick = _request(plan, Combo(runtime, "bash", "arena-bench", "shared"), 1, 2, "run", tmp_path, "http://x")
    assert request.deadline_s is not None and quick.deadline_s is not None
    assert request.deadline_s - quick.deadline_s == 2 * 10 * 30.0  # two waves, ten turns' worth of latency each
    assert request.env_args == {}  # no pool unless the level asks for one


def test_a_pooled_bench_level_takes_the_lean_path_with_the_pool_sized_by_its_concurrency(tmp_path):
    plan = BenchConfig(pairs=["docker-pool/arena-bash"], rollout_timeout=10).plan()
    request = _request(
        plan, Combo("docker-pool", "arena-bash", "arena-bench", "shared"), 8, 8, "run", tmp_path, "http://x"
    )
    assert request.taskset_args["docker"] == "lean" and request.env_args == {"pool": "auto"}
    assert request.max_concurrent == 8 and request.runtime_args == {"allow": []}


def test_a_bench_task_sets_up_on_a_box_that_carries_its_limits():
    """The bench task's setup runs whole (confine, then the baked scripts) on a box created with the
    task's limits: it once called `confine` without the agent user and every bench rollout failed."""
    from arena_bench.taskset import BenchTaskset, BenchTasksetConfig  # on the path only through the fixture

    task = next(iter(BenchTaskset(BenchTasksetConfig()).load()))
    box = SimpleNamespace(
        name="docker", info=SimpleNamespace(type="docker", id="c"), created_pids_limit=task.config.pids_limit
    )
    asyncio.run(task.setup(trace=None, runtime=box))


@pytest.mark.parametrize(
    ("runtime", "image", "expected"),
    [
        ("docker-lean", None, "arena/schema-migration:latest"),
        ("docker-lean", "arena/schema-migration:0123456789abcdef", "arena/schema-migration:0123456789abcdef"),
        (
            "prime",
            "registry.example/arena/schema-migration@sha256:" + "a" * 64,
            "registry.example/arena/schema-migration@sha256:" + "a" * 64,
        ),
    ],
)
def test_an_environment_s_bench_level_hands_its_image_to_the_tasks(tmp_path, runtime, image, expected):
    """An environment's task names its own image, which replaces the runtime's: the bench's reaches it as the task's."""
    plan = BenchConfig(
        pairs=[f"{runtime}/bash"], environment="schema-migration", image=image, rollout_timeout=10
    ).plan()
    request = _request(plan, Combo(runtime, "bash", "schema-migration", "env"), 1, 2, "run", tmp_path, "http://x")
    assert request.taskset_args == {"task": {"image": expected}}
