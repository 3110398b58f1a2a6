"""Shared test set-up. Recipes: `pytest -n auto` (all), `-m 'not docker'` (no engine needed),
`-m docker` (containers only). Docker tests skip outside CI when no engine answers, and fail in CI.

Images are built once per run: the first worker to need them runs the (content-hash cached)
builder under a file lock; the others then find them up to date.
"""

import os

import pytest
from filelock import FileLock

from arena.engine import ENGINE_HINT, engine_problem


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
