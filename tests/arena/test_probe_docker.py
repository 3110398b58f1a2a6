"""`arena probe` on both environments at a small N, through the bash harness in docker: every
policy runs, the gate's rules hold for the staller, oracle, degenerate policies and cheaters, and no
rule touches an honest policy (the documented full run is `arena probe --tasks 50 --split dev|test`).

Two tasks cannot decide a rule read from a bound (the oracle's lower bound needs 29 perfect tasks),
so here the gate must end undecided (exit 3) with no rule failed: the deterministic rules are
decided, the statistical ones say how many tasks they need. The in-process ladder tests
(tests/environments/fault_localisation, tests/environments/schema_migration) and the N=50 docker
gate decide them."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


def test_probe_gate_passes_on_both_environments(images, tmp_path, fault_localisation_probe_runs):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena.cli",
            "probe",
            "fault-localisation",
            "schema-migration",
            "--tasks",
            "2",
            "--parallel",
            "3",
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "gate undecided: no rule failed" in proc.stdout and "GATE FAILED" not in proc.stderr
    assert (
        "oracle-reaches-ceiling (oracle): undecided — oracle mean" in proc.stdout
        and "run more tasks (about" in proc.stdout
    )
    for line in ("fault-localisation   oracle", "schema-migration     oracle", "cheater_", "shortcut_"):
        assert line in proc.stdout
    [report_path] = list(tmp_path.glob("probe-*/probe.json"))
    report = json.loads(report_path.read_text())
    assert report["complete"]
    assert report["gate"] == "undecided" and report["failures"] == [], report["failures"]
    decided = {r["rule"] for r in report["rules"] if r["status"] == "met"}
    assert {"episodes-ran", "staller-scores-zero", "honest-policies-untouched"} <= decided
    scores = {(s["env"], s["policy"]): s for s in report["scores"]}
    shortcuts = [s for s in scores.values() if s["role"] == "shortcut"]
    assert {s["env"] for s in shortcuts} == {"fault-localisation", "schema-migration"}
    assert all(s["episodes"] == 2 and s["failed"] == 0 and s["rewrites"] == 0 for s in shortcuts)
    assert scores[("fault-localisation", "cheater_host_probe")]["rewrites"] == 2  # denied in each of its 2 episodes
    assert scores[("schema-migration", "cheater_read_heldout")]["rewrites"] == 2
    assert (
        scores[("fault-localisation", "oracle")]["rewrites"] == scores[("schema-migration", "oracle")]["rewrites"] == 0
    )
