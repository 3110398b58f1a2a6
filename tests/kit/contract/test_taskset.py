"""The taskset half: disjoint split seeds, the knobs Arena's commands pass, and no task off the contract."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
import verifiers.v1 as vf

from arena_kit.contract import Environment
from arena_kit.contract.task import ArenaData, ArenaTask, ArenaTaskConfig
from arena_kit.contract.taskset import ArenaTaskset, ArenaTasksetConfig, split_seeds

SPEC = Environment(id="contract-unit", taskset="contract_unit.taskset:Tasks", policies="contract_unit.policies:P")


class Task(ArenaTask[ArenaData, vf.State, ArenaTaskConfig]):
    ENVIRONMENT = SPEC

    async def held_out(self, trace: vf.Trace) -> Sequence[str]:
        return ()


class Config(ArenaTasksetConfig):
    task: ArenaTaskConfig = ArenaTaskConfig()


class Tasks(ArenaTaskset, vf.Taskset[Task, Config]):
    def load(self) -> Iterator[Task]:
        for seed in self.config.seeds():
            yield Task(ArenaData(id=str(seed), prompt="p"), self.config.task)


def test_the_splits_never_share_a_seed() -> None:
    train, dev, test = (set(split_seeds(s, 1_000_000)) for s in ("train", "dev", "test"))  # type: ignore[arg-type]
    assert not (train & dev or dev & test or train & test)
    with pytest.raises(ValueError, match="0 to 1,000,000 tasks"):
        split_seeds("dev", 1_000_001)


def test_the_taskset_takes_split_and_num_tasks_and_verifiers_finds_its_types() -> None:
    config = Config(split="test", num_tasks=3)
    assert [t.data.id for t in Tasks(config).load()] == ["2000000", "2000001", "2000002"]
    assert Tasks.task_type() is Task
    with pytest.raises(ValueError):
        Config.model_validate({"split": "holdout"})


def test_a_taskset_of_tasks_off_the_contract_is_refused_when_defined() -> None:
    class Plain(vf.Task[vf.TaskData, vf.State, vf.TaskConfig]):
        pass

    with pytest.raises(TypeError, match="yields .*Plain, which is not an ArenaTask"):

        class Off(ArenaTaskset, vf.Taskset[Plain, Config]):
            def load(self) -> Iterator[Plain]:
                return iter(())
