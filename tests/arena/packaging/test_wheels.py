"""The wheels install and work without a checkout: built from a copy of the sources, installed into a
fresh venv from those wheels plus PyPI only, and run from a temporary directory.

`uv pip install` reads no pip configuration, so the index is PyPI and the six Arena wheels come only
from the local wheel folder (`--find-links`); its cache makes a repeat install take seconds. Nothing
of the checkout is on `sys.path`: no `-e`, and every command runs with a temporary cwd and no
PYTHONPATH.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.images.specs import DOCKERFILES
from arena.new_env.scaffold import TEMPLATE_DIR
from arena.traces import read_traces

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "arena-evals": ["pyproject.toml", "README.md", "arena", "runtime_bench"],
    "arena-kit": ["kit"],
    "log-search": ["toolsets/log_search"],
    "sqlite-sandbox": ["toolsets/sqlite_sandbox"],
    "fault-localisation": ["environments/fault_localisation"],
    "schema-migration": ["environments/schema_migration"],
}
"""Distribution → what its build needs from the checkout (a folder holding a pyproject, or the root's files)."""
ENTRY_POINTS = ("arena-evals", "fault-localisation", "schema-migration")
"""What a user installs; the rest must arrive as their declared dependencies."""
BUILD_JUNK = shutil.ignore_patterns("*.egg-info", "__pycache__", "build", "dist")


def _stage(dist: str, dest: Path) -> Path:
    """Copy one package's sources out of the checkout, so building leaves no egg-info or build/ in it."""
    target = dest / dist
    target.mkdir(parents=True)
    sources = PACKAGES[dist]
    if len(sources) == 1:
        shutil.copytree(ROOT / sources[0], target, ignore=BUILD_JUNK, dirs_exist_ok=True)
        return target
    for name in sources:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=BUILD_JUNK)
        else:
            shutil.copy(src, target / name)
    return target


def _uv() -> str:
    from uv import find_uv_bin

    return str(find_uv_bin())


def _build_wheel(dist: str, staging: Path, wheels: Path) -> Path:
    source = _stage(dist, staging)
    proc = subprocess.run(
        [_uv(), "build", "--wheel", "--quiet", "-o", str(wheels), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=staging,
    )
    assert proc.returncode == 0, f"uv build of {dist} failed:\n{proc.stderr[-3000:]}"
    [wheel] = wheels.glob(f"{dist.replace('-', '_')}-*.whl")
    return wheel


def _clean_env(venv: Path, **extra: str) -> dict[str, str]:
    """The host's environment with the venv first on PATH and nothing pointing into the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return {**env, **extra}


@pytest.mark.slow
def test_platform_wheel_ships_its_dockerfiles_the_new_env_templates_and_the_arena_command(tmp_path):
    wheel = _build_wheel("arena-evals", tmp_path / "src", tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "Name: arena-evals" in archive.read(metadata).decode()
        assert "arena = arena.cli:main" in archive.read(entry_points).decode()
    for data in (DOCKERFILES, TEMPLATE_DIR):  # what `arena images build` and `arena new-env` read
        shipped = {
            f"arena/{p.relative_to(ROOT / 'arena').as_posix()}"
            for p in data.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert shipped, f"no files under {data}"
        assert shipped <= names, sorted(shipped - names)


@pytest.mark.slow
def test_platform_wheel_requires_matplotlib_only_with_the_bench_extra(tmp_path):
    """`pip install arena-evals` pulls no plotting stack; `arena-evals[bench]` adds it for `arena bench`."""
    wheel = _build_wheel("arena-evals", tmp_path / "src", tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
        assert "Provides-Extra: bench" in archive.read(metadata).decode()
    plotting = [req for req in requires if req.startswith("matplotlib")]
    assert plotting and all(req.endswith('extra == "bench"') for req in plotting), plotting


@pytest.mark.parametrize("dist", ["fault-localisation", "schema-migration"])
@pytest.mark.slow
def test_environment_wheel_ships_its_image_dockerfile(dist, tmp_path):
    wheel = _build_wheel(dist, tmp_path / "src", tmp_path / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        assert f"{dist.replace('-', '_')}/image/Dockerfile" in archive.namelist()


@dataclass(frozen=True)
class Installed:
    venv: Path
    cwd: Path

    def run(self, *argv: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.cwd,
            env=_clean_env(self.venv, **env),
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv holding Arena installed from freshly built wheels."""
    base = tmp_path_factory.mktemp("wheels")
    wheels = base / "wheels"
    for dist in PACKAGES:
        _build_wheel(dist, base / "src", wheels)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    cwd = base / "cwd"
    cwd.mkdir()
    proc = subprocess.run(
        [
            _uv(),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(venv / "bin/python"),
            "--find-links",
            str(wheels),
            *ENTRY_POINTS,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env=_clean_env(venv),
    )
    assert proc.returncode == 0, f"pip install from the wheels failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
    return Installed(venv, cwd)


RESOLVE = """
import importlib, sys
import verifiers.v1 as vf
venv = sys.argv[1]
for module in ("arena", "arena_kit", "log_search", "sqlite_sandbox", "fault_localisation", "schema_migration"):
    path = importlib.import_module(module).__file__
    assert path.startswith(venv), f"{module} imported from {path}, not the venv"
for taskset_id in ("fault-localisation", "schema-migration"):
    config = vf.taskset_config_type(taskset_id).model_validate({"id": taskset_id, "split": "test"})
    task = next(iter(vf.load_taskset(config).take(1)))
    print(taskset_id, type(task).__name__, task.data.image)
"""


@pytest.mark.docker
def test_installed_wheels_resolve_both_tasksets_and_a_prime_config(installed, tmp_path):
    proc = installed.run("python", "-c", RESOLVE, str(installed.venv))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("\n") == 2, proc.stdout
    for taskset_id in ("fault-localisation", "schema-migration"):  # each task names its environment's own image
        assert f"{taskset_id} " in proc.stdout and f" arena/{taskset_id}:latest\n" in proc.stdout, proc.stdout
    proc = installed.run(
        "vf-eval",
        "schema-migration",
        "@",
        str(ROOT / "configs/bash-prime.toml"),
        "--dry-run",
        "-o",
        str(tmp_path),
        ARENA_MODEL_KEY="x",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.docker
def test_installed_arena_finds_its_dockerfiles_and_builds_the_same_images(installed, images):
    proc = installed.run("arena", "images", "build", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for name, tag in images.items():
        # Same content hash as the checkout's build, so nothing is rebuilt.
        assert f"{name}: up to date {tag}" in proc.stdout, proc.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def installed_server(installed: Installed) -> Iterator[str]:
    """`arena serve` from the venv on a free port; yields its /v1 URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [str(installed.venv / "bin/arena"), "serve", "--port", str(port)],
        cwd=installed.cwd,
        env=_clean_env(installed.venv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"installed `arena serve` did not answer on {url}: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
                    )
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.docker
def test_installed_packages_run_a_scored_docker_rollout(installed, installed_server, images, tmp_path):
    """One schema-migration oracle rollout (bash, docker) from the shipped config, every part from the venv."""
    proc = installed.run(
        "vf-eval",
        "schema-migration",
        "@",
        str(ROOT / "configs/bash.toml"),
        "-m",
        "arena/schema-migration/oracle",
        "--client.base-url",
        installed_server,
        "-n",
        "1",
        "-o",
        str(tmp_path),
        "--no-rich",
        timeout=600,
        ARENA_MODEL_KEY="local",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    [run_dir] = [p.parent for p in tmp_path.rglob("traces.jsonl")]
    [episode] = read_traces(run_dir).episodes
    assert not episode.failed, (episode.errors, episode.stop_condition)
    assert episode.reward is not None and episode.reward >= 0.98, (episode.reward, episode.info)
