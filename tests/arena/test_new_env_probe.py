"""The scaffold end to end, as the guide runs it: `arena new-env` → pip install → `arena images build` → `arena probe --tasks 5`.

Five tasks cannot decide the rules read from a bound (the oracle's lower bound needs 29 perfect
tasks), so the gate must end undecided (exit 3) with no rule failed, every episode run and scored,
and the deterministic rules met; the probe says about how many tasks decide the rest.

The package is installed with pip into a folder of this test's own (`--target`, on PYTHONPATH for
the commands, which vf-eval inherits), not into the shared venv: other tests running at the same
time list the installed environments. Its id is unique to the run, and its image tags (built FROM
the harness image, a few label layers) are removed at the end, as are any containers left with its label.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.engine import docker_client

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _arena(*argv: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *argv], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture
def scaffold_id() -> Iterator[str]:
    env_id = f"scaffold-probe-{uuid.uuid4().hex[:8]}"
    yield env_id
    client = docker_client()
    for container in client.containers.list(all=True, filters={"label": f"arena.env={env_id}"}):
        container.remove(force=True)  # none expected: the probe reaps its own; this is the backstop
    for image in client.images.list(name=f"arena/{env_id}"):
        for tag in image.tags:
            client.images.remove(tag)


def test_a_scaffolded_environment_installs_builds_and_passes_its_probe(
    images: dict[str, str], scaffold_id: str, tmp_path: Path
) -> None:
    env = {**os.environ}
    done = _arena("new-env", scaffold_id, "--dir", str(tmp_path / "pkg"), env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(tmp_path / "pkg")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))

    built = _arena("images", "build", scaffold_id, env=env, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    assert f"{scaffold_id}: built arena/{scaffold_id}:" in built.stdout

    probe = _arena(
        "probe",
        scaffold_id,
        "--tasks",
        "5",
        "--parallel",
        "2",
        "--output-dir",
        str(tmp_path / "out"),
        env=env,
        timeout=1200,
    )
    assert probe.returncode == 3, probe.stdout[-4000:] + probe.stderr[-3000:]
    assert "gate undecided: no rule failed" in probe.stdout and "GATE FAILED" not in probe.stderr
    # how many tasks would decide the rest depends on the shortcut's scores on the tasks the secret draws
    assert re.search(r"run more tasks \(about \d+ decide them all", probe.stdout), probe.stdout[-2000:]
    [report_path] = list((tmp_path / "out").glob("probe-*/probe.json"))
    report = json.loads(report_path.read_text())
    assert report["complete"] and report["gate"] == "undecided" and report["failures"] == []
    scores = {s["policy"]: s for s in report["scores"]}
    assert set(scores) == {"staller", "oracle", "exhaustive", "shortcut_peek"}
    assert all(s["episodes"] == 5 and s["failed"] == 0 and s["rewrites"] == 0 for s in scores.values())
    assert scores["oracle"]["mean"] == 1.0 and scores["exhaustive"]["mean"] == 0.5 and scores["staller"]["mean"] == 0.0
    # peek is right on 2 of 32 positions, so two hits in five tasks come once in 30 ids; its rate over 200
    # tasks is the package's own test (test_the_shortcut_stays_far_below_the_oracle). Here: below the oracle.
    assert scores["shortcut_peek"]["mean"] < scores["oracle"]["mean"]
    met = {r["rule"] for r in report["rules"] if r["status"] == "met"}
    assert {"episodes-ran", "staller-scores-zero", "honest-policies-untouched"} <= met
