"""run_probe's plumbing with a fake vf-eval: the split, the knobs and the policy filter reach each
eval's config, and probe.json is written as policies finish (the docker test runs the real thing)."""

import json
import tomllib

import pytest

from arena.probe import run_probe
from arena_testkit.fake_vf_eval import fake_vf_eval  # noqa: F401 (fixture)


@pytest.mark.slow
def test_the_split_knobs_and_policy_filter_reach_every_eval_and_the_report_grows_as_policies_finish(
    fake_vf_eval, tmp_path
):
    seen_reports: list[dict] = []

    def progress(line: str) -> None:
        if line.startswith("["):
            [report] = tmp_path.glob("probe-*/probe.json")
            seen_reports.append(json.loads(report.read_text()))

    scores, failures, report = run_probe(
        ["fault-localisation"],
        tasks=3,
        split="test",
        policies=["shortcut_*"],
        taskset_args={"services": 8},
        output_dir=tmp_path,
        parallel_evals=1,
        progress=progress,
    )
    policies = [s.policy for s in scores]
    assert policies[:2] == ["staller", "oracle"] and len(policies) > 2
    assert all(p.startswith("shortcut_") for p in policies[2:])
    for config_path in report.parent.glob("*.arena.toml"):
        config = tomllib.loads(config_path.read_text())
        assert config["env"]["taskset"]["split"] == "test" and config["env"]["taskset"]["services"] == 8
    assert [len(r["scores"]) for r in seen_reports] == list(range(1, len(policies) + 1))
    assert not any(r["complete"] for r in seen_reports)
    final = json.loads(report.read_text())
    assert final["complete"] and final["split"] == "test"
    assert {s["role"] for s in final["scores"]} == {"staller", "standard", "shortcut"}
    assert {f.rule for f in failures} >= {"staller-scores-zero"}  # every fake episode scores 0.5
