"""`arena probe` on both environments at a small N, through the bash harness in docker: the gate
passes (the documented full run is `arena probe --tasks 50`)."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def test_probe_gate_passes_on_both_environments(images, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "probe", "fault-localisation", "schema-migration",
         "--tasks", "2", "--parallel", "3", "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "gate passed" in proc.stdout
    for line in ("fault-localisation   oracle", "schema-migration     oracle", "cheater_"):
        assert line in proc.stdout
    [report] = list(tmp_path.glob("probe-*/probe.json"))
    rewrites = {(s["env"], s["policy"]): s["rewrites"] for s in json.loads(report.read_text())["scores"]}
    assert rewrites[("fault-localisation", "cheater_host_probe")] == 2  # denied in each of its 2 episodes
    assert rewrites[("schema-migration", "cheater_read_heldout")] == 2
    assert rewrites[("fault-localisation", "oracle")] == rewrites[("schema-migration", "oracle")] == 0
