"""Shared test set-up. Recipes: `pytest -n auto` (all), `-m 'not docker'` (no engine needed),
`-m docker` (containers only). Docker tests skip outside CI when no engine answers, and fail in CI.

Images are built once per run: the first worker to need them runs the (content-hash cached)
builder under a file lock; the others then find them up to date.

A test whose asyncio child process outlives its event loop (not awaited on a timeout or a
cancellation) fails at its own teardown: otherwise the transport's `__del__` raises "Event loop is
closed" whenever a later test happens to run the garbage collector, and that test is blamed.
"""

import asyncio.base_subprocess
import os
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from arena.engine import ENGINE_HINT, engine_problem

# Tasks hide what the agent must not regenerate behind the host's task secret (arena_kit.task_secret):
# the suite runs under one fixed secret, so a seed names the same task on every machine and in every
# subprocess (vf-eval, the probe) the tests start. Assigned, not defaulted: a secret the shell or CI exports
# would otherwise change every task the suite draws.
os.environ["ARENA_TASK_SECRET"] = "arena-test-suite-task-secret"


@pytest.fixture(autouse=True)
def _docker_engine(request: pytest.FixtureRequest) -> None:
    """Docker-marked tests need an engine: skip with a fix outside CI, fail in CI."""
    if request.node.get_closest_marker("docker") is None:
        return
    problem = engine_problem()
    if problem is None:
        return
    message = f"{problem}. Fix: {ENGINE_HINT}"
    if os.environ.get("CI"):
        pytest.fail(f"Docker-backed test cannot run in CI: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Name → tag of every Arena image, built (or found up to date) once per test run."""
    problem = engine_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Docker-backed test cannot run in CI: {problem}. Fix: {ENGINE_HINT}", pytrace=False)
        pytest.skip(f"{problem}. Fix: {ENGINE_HINT}")
    from arena.images import build_images, default_ca_bundle

    lock = tmp_path_factory.getbasetemp().parent / "arena-images.lock"
    with FileLock(str(lock)):
        results = build_images(ca_bundle=default_ca_bundle(), progress=lambda _line: None)
    return {r.name: r.tag for r in results}


@pytest.fixture(scope="session")
def egress_lock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file every worker's `container_egress_cut` (shared) and `outside_reach` (exclusive) hold:
    the cut is a host-wide iptables rule, so a test that needs the way out must not overlap one."""
    return tmp_path_factory.getbasetemp().parent / "arena-egress.lock"


@pytest.fixture
def fault_localisation_probe_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Held by the docker tests that probe fault-localisation on bash/dev, one at a time across workers:
    their evals share run names (`arena.probe._run_name`: env, policy, harness, split), and an eval's
    leftover sweep removes every box of its run name created since it started, live ones of the other
    probe included."""
    with FileLock(str(tmp_path_factory.getbasetemp().parent / "arena-probe-fault-localisation.lock")):
        yield


_TRANSPORTS: weakref.WeakSet[asyncio.base_subprocess.BaseSubprocessTransport] = weakref.WeakSet()
_transport_init = asyncio.base_subprocess.BaseSubprocessTransport.__init__


def _tracked_init(self: asyncio.base_subprocess.BaseSubprocessTransport, *args: object, **kwargs: object) -> None:
    _TRANSPORTS.add(self)
    _transport_init(self, *args, **kwargs)  # type: ignore[arg-type]


asyncio.base_subprocess.BaseSubprocessTransport.__init__ = _tracked_init  # type: ignore[method-assign]


def orphaned_transports() -> list[asyncio.base_subprocess.BaseSubprocessTransport]:
    """Subprocess transports still open whose event loop has closed (each would raise in `__del__`)."""
    return [t for t in list(_TRANSPORTS) if not t.is_closing() and t._loop is not None and t._loop.is_closed()]


@pytest.fixture(autouse=True)
def _no_orphaned_subprocess_transport():
    """Fail the test that left an asyncio child process behind its closed event loop, by name."""
    before = {id(t) for t in orphaned_transports()}
    yield
    left = [t for t in orphaned_transports() if id(t) not in before]
    for transport in left:
        _TRANSPORTS.discard(transport)  # reported once, here
    assert not left, f"asyncio child processes outlived their event loop (kill and await them on every path): {left}"
