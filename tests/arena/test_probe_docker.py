"""`arena probe` on both environments at a small N, through the bash harness in docker: every
policy runs, the gate's rules hold for the staller, oracle, degenerate policies and cheaters, and no
rule touches an honest policy (the documented full run is `arena probe --tasks 50 --split dev|test`).

Two tasks cannot measure a shortcut's mean (one lucky task is half the score), so here the
`shortcuts-fail` rule is only reported; the in-process ladder tests (tests/environments/fault_localisation,
tests/environments/schema_migration) and the N=50 docker gate hold them to their ceilings."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def test_probe_gate_passes_on_both_environments(images, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "probe", "fault-localisation", "schema-migration",
         "--tasks", "2", "--parallel", "3", "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=2400,
    )
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    for line in ("fault-localisation   oracle", "schema-migration     oracle", "cheater_", "shortcut_"):
        assert line in proc.stdout
    [report_path] = list(tmp_path.glob("probe-*/probe.json"))
    report = json.loads(report_path.read_text())
    assert report["complete"]
    assert {f["rule"] for f in report["failures"]} <= {"shortcuts-fail"}, report["failures"]
    assert (proc.returncode == 0) == (not report["failures"])
    scores = {(s["env"], s["policy"]): s for s in report["scores"]}
    shortcuts = [s for s in scores.values() if s["role"] == "shortcut"]
    assert {s["env"] for s in shortcuts} == {"fault-localisation", "schema-migration"}
    assert all(s["episodes"] == 2 and s["failed"] == 0 and s["rewrites"] == 0 for s in shortcuts)
    assert scores[("fault-localisation", "cheater_host_probe")]["rewrites"] == 2  # denied in each of its 2 episodes
    assert scores[("schema-migration", "cheater_read_heldout")]["rewrites"] == 2
    assert scores[("fault-localisation", "oracle")]["rewrites"] == scores[("schema-migration", "oracle")]["rewrites"] == 0
