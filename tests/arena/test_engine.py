"""Without a Docker engine, commands that need one fail fast with the fix, not a traceback."""

import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_images_build_without_an_engine_exits_2_and_says_how_to_start_one(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-such-docker.sock"}
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "images", "build", "base"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Docker daemon not reachable" in proc.stderr
    assert "images/ensure-docker.sh" in proc.stderr
    assert "Traceback" not in proc.stderr
