"""The degenerate-policy gate for fault-localisation in docker, small (N=2 dev tasks): every policy
the environment publishes, the learned shortcut and the investigations included, through the real
harness; the full N=50 gates are run by hand and reported in the environment's README."""

import pytest

from arena.probe import run_probe
from arena.probe_rules import gate_verdict

pytestmark = pytest.mark.docker


def test_the_gate_passes_with_the_learned_shortcut_and_the_investigations_in_it(
    images, tmp_path, fault_localisation_probe_runs
):
    scores, results, _report = run_probe(
        ["fault-localisation"], tasks=2, split="dev", output_dir=tmp_path, parallel_evals=2, progress=lambda _line: None
    )
    # Two tasks decide no rule read from a bound (the N=50 gates do, README): none may fail, and
    # the gate must say it is undecided rather than pass.
    assert not [r for r in results if r.status == "failed"], results
    assert gate_verdict(results) == "undecided"
    by = {s.policy: s for s in scores}
    assert {"shortcut_learned", "shortcut_learned_names", "shortcut_learned_counts_graph"} <= set(by)
    assert {s.role for s in scores if s.policy.startswith("investigate_")} == {"investigation"}
    assert all(s.failed == 0 and s.episodes == 2 for s in scores)
    assert by["oracle"].mean == 1.0 and by["investigate_first_to_fail"].mean > 0.5
    assert by["shortcut_random_root"].mean <= 0.1 and by["shortcut_cite_twin"].mean <= 0.1
