"""A warm pool of lean boxes: booted ahead of demand, one fresh box per rollout, removed off the critical path.

The design decision: a box's boot (create, start, the workdir, a listener in its network namespace:
`LeanDockerRuntime.boot`) binds to no rollout, so the pool runs it ahead of demand for a `BoxSpec`,
exactly the spec an unpooled box of that rollout gets (image, limits, env, writable mounts,
network), keyed by it. A claim takes a ready box of its spec, asks the *engine* whether it still
runs (a box killed while it waited is removed and never handed out), and attaches the rollout's
egress proxy (`LeanDockerRuntime.attach`); with none ready it waits for a box already booting for
it, else boots one itself (the unpooled path). A box is never reused: `release` removes it in the
background, a few at a time, so the rollout's result is recorded without waiting for the engine.

Refills are event-driven (a claim, a plan, a finished boot), never polled: an idle pool is boxes
running `sleep infinity` and no host work. The pool holds at most `size` boxes per spec, and never
more than the rollouts still planned for that spec (`plan`), so an eval ends with none to spare.
`size` None sizes the pool from the claims seen in flight at once (the eval's concurrency, learnt).
Every pooled box carries the run label (as every lean box does), `arena.managed=true` and
`POOL_LABEL`, so `arena reap` and the post-eval reap find one a SIGKILL left; each is also
registered with verifiers' atexit backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.v1.runtimes import register
from verifiers.v1.runtimes.docker import DockerConfig
from verifiers.v1.utils.aio import run_shielded

from arena_kit.runtimes.lean_docker.runtime import LeanDockerRuntime

__all__ = ["MANAGED_LABEL", "POOL_LABEL", "REMOVALS", "BoxPool", "BoxSpec", "Claim"]

logger = logging.getLogger(__name__)

POOL_LABEL = "arena.pool"
"""Set on every box a pool boots: the pool's id (one per env process)."""
MANAGED_LABEL = ("arena.managed", "true")
"""Arena images carry it; a pooled box also sets it, so the reaper finds one from any image."""
REMOVALS = 4
"""Box removals at once (released boxes, discards, the pool's leftovers at close)."""
PRESTART_NAME = "<arena prestarted program>"
"""The file name a prestarted program is compiled under (its tracebacks' name; `sys.argv[0]` is the path
its harness gives at the run)."""


@dataclass(frozen=True)
class BoxSpec:
    """Everything a lean box is created from: two rollouts with equal specs get interchangeable boxes."""

    config: DockerConfig
    pids_limit: int | None = None
    writable: Mapping[str, str] | None = None
    workdir_owner: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    nofile: int | None = None
    """RLIMIT_NOFILE of the box's processes (`arena_kit.runtimes.file_table`); None: the engine's default."""
    own_uid: str | None = None
    """The user each box of this spec gives a uid of its own (`arena_kit.runtimes.agent_uids`); None: none."""
    prestart: bytes | None = None
    """A program to start in each pooled box once booted, loaded for the rollout's harness
    (`LeanDockerRuntime.prestart`, as `workdir_owner`); None: none."""

    @property
    def key(self) -> str:
        return json.dumps(
            [
                self.config.model_dump(mode="json"),
                self.pids_limit,
                sorted((self.writable or {}).items()) if self.writable is not None else None,
                self.workdir_owner,
                self.nofile,
                self.own_uid,
                sorted(self.env.items()),
                hashlib.sha256(self.prestart).hexdigest() if self.prestart else None,
            ],
            sort_keys=True,
        )

    def box(self) -> LeanDockerRuntime:
        """An unstarted lean box of this spec (what `LeanEnv` builds for an unpooled rollout)."""
        box = LeanDockerRuntime(
            self.config,
            pids_limit=self.pids_limit,
            writable=self.writable,
            workdir_owner=self.workdir_owner,
            nofile=self.nofile,
            own_uid=self.own_uid,
        )
        box.env = dict(self.env)
        return box


@dataclass(frozen=True)
class Claim:
    """A started box handed to one rollout, and how it got there."""

    box: LeanDockerRuntime
    pooled: bool
    """The box was booted ahead of the claim (False: booted by the claim, the unpooled path)."""
    started_at: float
    """Epoch seconds the claim began: where the rollout's wait for a box starts."""
    seconds: float
    """How long the claim took (ready box: an inspect and the proxy's start)."""
    discarded: int = 0
    """Pooled boxes this claim found no longer running and removed."""

    def info(self) -> dict[str, Any]:
        return {
            "pooled": self.pooled,
            "claim_start": self.started_at,
            "claim_s": self.seconds,
            "discarded": self.discarded,
        }


@dataclass
class _Slot:
    spec: BoxSpec
    ready: deque[LeanDockerRuntime] = field(default_factory=deque)
    booting: int = 0
    waiters: deque[asyncio.Future[LeanDockerRuntime | None]] = field(default_factory=deque)
    planned: int | None = None
    """Rollouts planned for this spec (None: not told; then only `size` bounds the pool)."""
    warm_most: int | None = None
    """Until a plan: at most this many boxes (`warm`)."""
    claimed: int = 0


class BoxPool:
    """Warm lean boxes per `BoxSpec` (see the module docstring). Use on one event loop; `close` at the end."""

    def __init__(self, size: int | None, removals: int = REMOVALS) -> None:
        if size is not None and size < 1:
            raise ValueError(f"a pool holds at least one box per spec, got size={size}; a size of 0 is no pool")
        self.size = size
        self.id = uuid.uuid4().hex[:12]
        self.in_flight = 0
        """Claimed boxes not yet released."""
        self.peak = 0
        """The most claimed boxes in flight at once (what `size` None sizes the pool by)."""
        self._slots: dict[str, _Slot] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._removals = asyncio.Semaphore(removals)
        self._closed = False

    def plan(self, spec: BoxSpec, rollouts: int) -> None:
        """`rollouts` more rollouts of `spec` are coming: boot boxes for them (at most `size` at once)."""
        slot = self._slot(spec)
        slot.planned = (slot.planned or 0) + rollouts
        self._refill(slot)

    def warm(self, spec: BoxSpec, most: int | None = None) -> None:
        """Boot boxes for `spec` before any rollout is planned: `size` of them, or `most` if fewer (boxes
        booted beyond the plan that follows are removed unused at `close`). A learnt size is 0 until claims."""
        slot = self._slot(spec)
        slot.warm_most = most
        self._refill(slot)

    def ready(self, spec: BoxSpec) -> int:
        """Boxes of `spec` booted and waiting."""
        slot = self._slots.get(spec.key)
        return len(slot.ready) if slot else 0

    def booting(self, spec: BoxSpec) -> int:
        slot = self._slots.get(spec.key)
        return slot.booting if slot else 0

    async def claim(self, spec: BoxSpec) -> Claim:
        """A started box of `spec` for one rollout: a warm one the engine reports running, a booting one,
        else one booted now. The caller owns it from here and gives it back with `release`.

        Raises:
            SandboxError: booting the box (when none was warm) or attaching its proxy failed.
        """
        if self._closed:
            raise RuntimeError("the box pool is closed")
        began, clock = time.time(), time.monotonic()
        slot = self._slot(spec)
        slot.claimed += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        discarded = 0
        try:
            while True:
                box = await self._take(slot)
                if box is None:
                    box = spec.box()
                    register(box)
                    try:
                        await box.start()
                    except BaseException:
                        self._remove(box)
                        raise
                    return Claim(box, False, began, time.monotonic() - clock, discarded)
                if await box.alive():
                    try:
                        await box.attach()
                    except BaseException:
                        self._remove(box)
                        raise
                    return Claim(box, True, began, time.monotonic() - clock, discarded)
                logger.warning("lean pool: box %s is not running at its claim; removed, never used", box.info.id)
                discarded += 1
                self._remove(box)
        except BaseException:
            self.in_flight -= 1
            raise

    def release(self, box: LeanDockerRuntime) -> None:
        """The rollout is done with `box`: remove it in the background (never reused)."""
        self.in_flight = max(0, self.in_flight - 1)
        self._remove(box)

    async def close(self) -> None:
        """Stop refilling, wait for the boots under way, remove every box left, and wait for all removals."""
        self._closed = True
        for slot in self._slots.values():
            while slot.waiters:
                waiter = slot.waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
        while True:
            for slot in self._slots.values():
                while slot.ready:
                    self._remove(slot.ready.popleft())
            if not self._tasks:
                return
            await run_shielded(asyncio.gather(*list(self._tasks), return_exceptions=True))

    # --- machinery ---------------------------------------------------------------------------

    def _slot(self, spec: BoxSpec) -> _Slot:
        return self._slots.setdefault(spec.key, _Slot(spec))

    def _target(self, slot: _Slot) -> int:
        want = self.size if self.size is not None else self.peak
        if slot.planned is not None:
            want = min(want, max(0, slot.planned - slot.claimed))
        elif slot.warm_most is not None:
            want = min(want, slot.warm_most)
        return want + len(slot.waiters)

    def _refill(self, slot: _Slot) -> None:
        if self._closed:
            return
        while len(slot.ready) + slot.booting < self._target(slot):
            slot.booting += 1
            self._spawn(self._boot(slot))

    async def _take(self, slot: _Slot) -> LeanDockerRuntime | None:
        """A warm box, else one booting that no other claim waits for, else None (boot your own)."""
        if slot.ready:
            box = slot.ready.popleft()
            self._refill(slot)
            return box
        self._refill(slot)
        if slot.booting <= len(slot.waiters):
            return None
        waiter: asyncio.Future[LeanDockerRuntime | None] = asyncio.get_running_loop().create_future()
        slot.waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            with contextlib.suppress(ValueError):
                slot.waiters.remove(waiter)
            handed = waiter.result() if waiter.done() and not waiter.cancelled() else None
            if handed is not None:
                self._put_back(slot, handed)  # handed over as the claim was cancelled: still unused
            raise

    def _put_back(self, slot: _Slot, box: LeanDockerRuntime) -> None:
        if self._closed:
            self._remove(box)
        else:
            slot.ready.appendleft(box)

    async def _boot(self, slot: _Slot) -> None:
        box = slot.spec.box()
        box.labels = {POOL_LABEL: self.id, MANAGED_LABEL[0]: MANAGED_LABEL[1]}
        register(box)  # the atexit backstop removes it if a signal cuts the pool's close short
        try:
            await box.boot()
            if slot.spec.prestart is not None:
                await self._prestart(box, slot.spec)
        except Exception as error:  # noqa: BLE001 - a failed warm boot is logged; the claim boots its own
            logger.warning("lean pool: a warm box failed to boot: %s", error)
            slot.booting -= 1
            self._remove(box)
            if len(slot.waiters) > slot.booting:
                waiter = slot.waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
            return
        except BaseException:
            slot.booting -= 1
            self._remove(box)
            raise
        slot.booting -= 1
        if self._closed:
            self._remove(box)
            return
        while slot.waiters:
            waiter = slot.waiters.popleft()
            if not waiter.done():
                waiter.set_result(box)
                break
        else:
            slot.ready.append(box)
        self._refill(slot)  # a learnt size boots the next box now, ahead of the next claim

    @staticmethod
    async def _prestart(box: LeanDockerRuntime, spec: BoxSpec) -> None:
        """Start the spec's program in the booted box; one that fails to load leaves the box as good as
        one without (the rollout's harness runs its exec), and is logged."""
        assert spec.prestart is not None
        try:
            await box.with_user(spec.workdir_owner).prestart(spec.prestart, PRESTART_NAME)
        except Exception as error:  # noqa: BLE001 - the box itself is fine
            logger.warning(
                "lean pool: box %s: its program did not prestart (%s); its rollout runs it as an exec",
                box.info.id,
                error,
            )

    def _remove(self, box: LeanDockerRuntime) -> None:
        async def remove() -> None:
            async with self._removals:
                await box.stop()

        self._spawn(remove())

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
