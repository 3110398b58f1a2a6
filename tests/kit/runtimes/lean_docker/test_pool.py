"""The warm box pool against a fake engine: its size, claims, discards, refills, removals and close."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.docker import DockerConfig

from arena_kit.envs.lean import AUTO_HEADROOM, LeanEnvConfig, pool_size
from arena_kit.records import CONCURRENCY_ENV
from arena_kit.runtimes.lean_docker.pool import MANAGED_LABEL, POOL_LABEL, REMOVALS, BoxPool, BoxSpec
from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

SPEC = BoxSpec(DockerConfig(image="arena/harness:latest", allow=[], memory=1.0), pids_limit=256, env={"A": "1"})
OTHER = BoxSpec(DockerConfig(image="arena/harness:latest", allow=[], memory=2.0), pids_limit=256, env={"A": "1"})


class FakeEngine:
    """Boxes by name → running; boots wait on `gate` (when set); removals are counted at once."""

    def __init__(self) -> None:
        self.running: dict[str, bool] = {}
        self.booted: list[LeanDockerRuntime] = []
        self.removed: list[str] = []
        self.attached: list[str] = []
        self.gate: asyncio.Event | None = None
        self.fail_boots = 0
        self.removing = 0
        self.most_removing = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
        engine = self

        async def boot(box: LeanDockerRuntime) -> None:
            box.container = f"vf-fake-{len(engine.booted) + engine.fail_boots}-{id(box)}"
            if engine.gate is not None:
                await engine.gate.wait()
            if engine.fail_boots:
                engine.fail_boots -= 1
                raise SandboxError("box start: the engine refused")
            box.info.id = box.container
            engine.running[box.container] = True
            engine.booted.append(box)

        async def attach(box: LeanDockerRuntime) -> None:
            engine.attached.append(str(box.container))

        async def alive(box: LeanDockerRuntime) -> bool:
            return engine.running.get(str(box.container), False)

        async def teardown(box: LeanDockerRuntime) -> None:
            engine.removing += 1
            engine.most_removing = max(engine.most_removing, engine.removing)
            await asyncio.sleep(0.01)
            box.removed = True
            if engine.running.pop(str(box.container), None) is not None:
                engine.removed.append(str(box.container))
            engine.removing -= 1

        monkeypatch.setattr(LeanDockerRuntime, "boot", boot)
        monkeypatch.setattr(LeanDockerRuntime, "attach", attach)
        monkeypatch.setattr(LeanDockerRuntime, "alive", alive)
        monkeypatch.setattr(LeanDockerRuntime, "teardown", teardown)
        return self

    def kill(self, box: LeanDockerRuntime) -> None:
        self.running[str(box.container)] = False

    @property
    def left(self) -> list[str]:
        """Boxes the engine still has (running or not)."""
        return list(self.running)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    return FakeEngine().install(monkeypatch)


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(body(), 10))


async def settle(pool: BoxPool) -> None:
    """Until the pool has no boot or removal under way."""
    while pool._tasks:
        await asyncio.gather(*list(pool._tasks), return_exceptions=True)


def test_pool_size_is_n_or_the_eval_concurrency_with_headroom_or_learnt():
    assert pool_size(3, {}) == 3
    assert pool_size("auto", {CONCURRENCY_ENV: "8"}) == 8 + AUTO_HEADROOM == 10
    assert pool_size("auto", {}) is None
    assert pool_size("auto", {CONCURRENCY_ENV: "zero"}) is None
    with pytest.raises(ValueError):
        pool_size(0, {})


def test_a_pool_needs_the_lean_path_and_a_size_of_at_least_zero():
    assert LeanEnvConfig(taskset={"id": "arena-smoke"}).pool == 0  # off unless asked for
    with pytest.raises(ValueError, match='needs `docker = "lean"`'):
        LeanEnvConfig(taskset={"id": "arena-smoke"}, pool=2, docker="stock")
    with pytest.raises(ValueError):
        LeanEnvConfig(taskset={"id": "arena-smoke"}, pool=-1)


def test_specs_differing_in_any_field_key_apart_and_equal_specs_key_alike():
    assert SPEC.key != OTHER.key
    assert SPEC.key != BoxSpec(SPEC.config, pids_limit=256, env={"A": "2"}).key
    assert SPEC.key != BoxSpec(SPEC.config, pids_limit=256, env={"A": "1"}, writable={"/tmp": "size=1m"}).key
    assert (
        SPEC.key
        == BoxSpec(DockerConfig(image="arena/harness:latest", allow=[], memory=1.0), pids_limit=256, env={"A": "1"}).key
    )
    box = SPEC.box()
    assert (box.config.memory, box.created_pids_limit, box.env) == (1.0, 256, {"A": "1"})


def test_a_plan_boots_at_most_size_boxes_and_never_more_than_the_rollouts_planned(engine):
    async def body() -> None:
        pool = BoxPool(size=8)
        pool.plan(SPEC, 2)
        await settle(pool)
        assert (pool.ready(SPEC), len(engine.booted)) == (2, 2)
        pool.plan(OTHER, 20)
        await settle(pool)
        assert pool.ready(OTHER) == 8
        await pool.close()

    run(body)


def test_warm_boots_a_fixed_size_ahead_of_any_plan_and_a_learnt_size_boots_nothing(engine):
    async def body() -> None:
        fixed, learnt = BoxPool(size=3), BoxPool(size=None)
        fixed.warm(SPEC)
        learnt.warm(OTHER)
        await settle(fixed)
        await settle(learnt)
        assert (fixed.ready(SPEC), learnt.ready(OTHER)) == (3, 0)
        await fixed.close()
        await learnt.close()

    run(body)


def test_warm_boots_at_most_what_it_is_told_until_a_plan_sizes_the_pool(engine):
    async def body() -> None:
        pool = BoxPool(size=3)
        pool.warm(SPEC, most=2)
        await settle(pool)
        assert pool.ready(SPEC) == 2
        pool.plan(SPEC, 5)
        await settle(pool)
        assert pool.ready(SPEC) == 3
        await pool.close()

    run(body)


def test_an_auto_pool_warms_to_the_eval_concurrency_and_holds_headroom_once_planned():
    assert pool_size("auto", {CONCURRENCY_ENV: "4"}, headroom=0) == 4
    assert pool_size(3, {}, headroom=0) == 3


def test_a_claim_hands_out_a_warm_running_box_attached_labelled_and_refills_behind_it(engine):
    async def body() -> None:
        pool = BoxPool(size=1)
        pool.plan(SPEC, 3)
        await settle(pool)
        [warm] = engine.booted
        claim = await pool.claim(SPEC)
        assert claim.box is warm and claim.pooled and claim.discarded == 0
        assert engine.attached == [warm.container]  # the rollout's proxy starts at its claim
        assert warm.labels == {POOL_LABEL: pool.id, MANAGED_LABEL[0]: MANAGED_LABEL[1]}
        assert pool.booting(SPEC) == 1  # the next rollout's box boots while this one runs
        pool.release(claim.box)
        await settle(pool)
        assert warm.container in engine.removed and pool.ready(SPEC) == 1
        await pool.close()

    run(body)


def test_a_warm_box_the_engine_no_longer_runs_is_removed_at_its_claim_and_never_handed_out(engine):
    async def body() -> None:
        pool = BoxPool(size=2)
        pool.plan(SPEC, 2)
        await settle(pool)
        dead, good = engine.booted
        engine.kill(dead)
        claim = await pool.claim(SPEC)
        assert claim.box is good and claim.discarded == 1
        await settle(pool)
        assert dead.container in engine.removed and dead.container not in engine.attached
        second = await pool.claim(SPEC)  # the plan's last rollout: the pool booted a box in the dead one's place
        assert second.box not in (dead, good) and second.pooled and len(engine.booted) == 3
        pool.release(claim.box)
        pool.release(second.box)
        await pool.close()
        assert engine.left == []

    run(body)


def test_claims_during_a_boot_wait_for_the_boxes_booting_for_them_and_no_box_is_booted_twice(engine):
    async def body() -> None:
        engine.gate = asyncio.Event()
        pool = BoxPool(size=4)
        pool.plan(SPEC, 4)
        claims = [asyncio.ensure_future(pool.claim(SPEC)) for _ in range(4)]
        await asyncio.sleep(0.01)
        assert not any(c.done() for c in claims)
        engine.gate.set()
        done = await asyncio.gather(*claims)
        assert len({id(c.box) for c in done}) == 4 and len(engine.booted) == 4  # demand met, nothing to spare
        for c in done:
            pool.release(c.box)
        await pool.close()
        assert engine.left == []

    run(body)


def test_a_learnt_pool_boots_one_box_ahead_of_a_one_at_a_time_eval(engine):
    async def body() -> None:
        pool = BoxPool(size=None)
        pool.plan(SPEC, 3)
        first = await pool.claim(SPEC)
        await settle(pool)
        assert pool.ready(SPEC) == 1  # seen one rollout at a time: one box ahead
        pool.release(first.box)
        second = await pool.claim(SPEC)
        third_ready = pool.ready(SPEC) + pool.booting(SPEC)
        assert second.pooled and third_ready == 1
        pool.release(second.box)
        third = await pool.claim(SPEC)
        assert third.pooled
        pool.release(third.box)
        await pool.close()
        assert len(engine.booted) == 3 and engine.left == []  # one box per planned rollout, none to spare

    run(body)


def test_a_failed_warm_boot_sends_its_waiting_claim_to_boot_its_own(engine):
    async def body() -> None:
        engine.gate = asyncio.Event()
        engine.fail_boots = 1
        pool = BoxPool(size=1)
        pool.plan(SPEC, 1)
        claim = asyncio.ensure_future(pool.claim(SPEC))
        await asyncio.sleep(0.01)
        engine.gate.set()
        got = await claim
        assert not got.pooled and engine.running[str(got.box.container)]
        pool.release(got.box)
        await pool.close()

    run(body)


def test_a_claim_cancelled_while_it_waits_leaves_its_box_for_the_next(engine):
    async def body() -> None:
        engine.gate = asyncio.Event()
        pool = BoxPool(size=1)
        pool.plan(SPEC, 2)
        waiting = asyncio.ensure_future(pool.claim(SPEC))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        engine.gate.set()
        await settle(pool)
        assert pool.ready(SPEC) == 1 and pool.in_flight == 0
        claim = await pool.claim(SPEC)
        assert claim.pooled
        pool.release(claim.box)
        await pool.close()

    run(body)


def test_releases_remove_boxes_in_the_background_a_few_at_a_time(engine):
    async def body() -> None:
        pool = BoxPool(size=12)
        pool.plan(SPEC, 12)
        claims = [await pool.claim(SPEC) for _ in range(12)]
        for claim in claims:
            pool.release(claim.box)  # returns at once: the rollout's result is recorded meanwhile
        assert engine.removed == []
        await pool.close()
        assert len(engine.removed) == 12 and engine.most_removing <= REMOVALS

    run(body)


def test_close_removes_warm_boxes_and_those_still_booting_and_refuses_later_claims(engine):
    async def body() -> None:
        pool = BoxPool(size=2)
        pool.plan(SPEC, 4)
        await settle(pool)
        engine.gate = asyncio.Event()
        pool.plan(OTHER, 2)  # two boxes stuck booting
        closing = asyncio.ensure_future(pool.close())
        await asyncio.sleep(0.01)
        engine.gate.set()
        await closing
        assert engine.left == [] and len(engine.removed) == 4
        with pytest.raises(RuntimeError, match="closed"):
            await pool.claim(SPEC)

    run(body)


def test_close_of_an_idle_pool_removes_the_warm_boxes_no_rollout_claimed(engine):
    """A warm pool boots `size` boxes before the plan says fewer rollouts come: with nothing booting or
    removing at its close, those boxes were left running (a leak the bench's reap found)."""

    async def body() -> None:
        pool = BoxPool(size=3)
        pool.warm(SPEC)
        pool.plan(SPEC, 1)
        await settle(pool)
        claim = await pool.claim(SPEC)
        pool.release(claim.box)
        await settle(pool)
        assert pool.ready(SPEC) == 2 and pool._tasks == set()
        await pool.close()
        assert engine.left == [] and len(engine.removed) == 3

    run(body)


def test_an_idle_full_pool_has_no_task_running(engine):
    async def body() -> None:
        pool = BoxPool(size=3)
        pool.plan(SPEC, 10)
        await settle(pool)
        await asyncio.sleep(0.05)
        assert pool._tasks == set() and pool.ready(SPEC) == 3  # nothing polls: refills follow claims
        await pool.close()

    run(body)
