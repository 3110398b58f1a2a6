"""`arena probe --resume`: an interrupted probe keeps its complete policies and resumes the rest on
the same model-server address; a probe started with other arguments is refused. A fake `vf-eval`
on PATH records each launch and dies once, mid-run, for the oracle."""

import json
import textwrap

import pytest

from arena.errors import UsageError
from arena.probe import latest_probe, run_probe
from arena_kit import task_secret
from arena_testkit.fake_vf_eval import put_vf_eval_on_path

ENV = "fault-localisation"
DYING_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    run_dir = os.path.join(config["output_dir"], config["run"]["name"])
    os.makedirs(os.path.join(run_dir, "configs", "resolved"), exist_ok=True)
    with open(os.path.join(config["output_dir"], "launches.jsonl"), "a") as f:
        f.write(json.dumps([config["run"]["name"], config["client"]["base_url"], sys.argv[-1]]) + "\\n")
    if sys.argv[-1] == "--clean":
        json.dump(config, open(os.path.join(run_dir, "configs", "resolved", "eval.json"), "w"))
        if "oracle" in config["model"]:
            os._exit(137)  # killed mid-run: a saved config, no episode
    trace = {{"ok": True, "rewards": {{"r": {{"score": 1.0}}}}}}
    with open(os.path.join(run_dir, "traces.jsonl"), "w") as f:
        f.write(json.dumps({{"ok": True, "task": {{"data": {{"name": "t0"}}}}, "traces": [trace]}}) + "\\n")
    """
)


def _probe(out, **kwargs):
    return run_probe(
        [ENV], tasks=1, policies=["none-but-the-two"], output_dir=out, progress=lambda _line: None, **kwargs
    )


def test_a_resumed_probe_runs_only_its_unfinished_policy_on_the_same_server(tmp_path, monkeypatch):
    put_vf_eval_on_path(DYING_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    scores, _failures, report = _probe(out)
    assert {s.policy: s.complete for s in scores} == {"staller": True, "oracle": False}
    assert latest_probe(out) == report.parent

    scores, _failures, report = _probe(out, resume=report.parent)
    launches = [json.loads(line) for line in (report.parent / "launches.jsonl").read_text().splitlines()]
    first, resumed = (
        [(name, mode) for name, _url, mode in launches[:2]],
        [(name, mode) for name, _url, mode in launches[2:]],
    )
    assert sorted(first) == [(f"{ENV}-oracle-bash-dev", "--clean"), (f"{ENV}-staller-bash-dev", "--clean")]
    assert resumed == [(f"{ENV}-oracle-bash-dev", "--resume")], "only the unfinished policy runs again"
    assert len({url for _name, url, _mode in launches}) == 1, "a resumed run must reach the same model server"
    assert {s.policy: (s.complete, s.mean) for s in scores} == {"staller": (True, 1.0), "oracle": (True, 1.0)}
    assert json.loads(report.read_text())["complete"] is True


def test_a_probe_started_with_other_arguments_is_not_resumed(tmp_path, monkeypatch):
    put_vf_eval_on_path(DYING_VF_EVAL, tmp_path, monkeypatch)
    _scores, _failures, report = _probe(tmp_path / "out")
    with pytest.raises(UsageError, match="started with tasks=1"):
        run_probe(
            [ENV],
            tasks=2,
            policies=["none"],
            output_dir=tmp_path / "out",
            resume=report.parent,
            progress=lambda _l: None,
        )


def test_resuming_where_no_probe_ran_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no probe to resume"):
        latest_probe(tmp_path)
    with pytest.raises(UsageError, match="holds no probe.json"):
        _probe(tmp_path, resume=tmp_path)


def test_a_policy_that_ran_fewer_episodes_than_tasks_is_resumed_not_kept(tmp_path, monkeypatch):
    put_vf_eval_on_path(DYING_VF_EVAL, tmp_path, monkeypatch)  # writes one episode, whatever the task count
    out = tmp_path / "out"
    _scores, _failures, report = run_probe([ENV], tasks=2, policies=["none"], output_dir=out, progress=lambda _l: None)
    run_probe([ENV], tasks=2, policies=["none"], output_dir=out, resume=report.parent, progress=lambda _l: None)
    launches = [json.loads(line) for line in (report.parent / "launches.jsonl").read_text().splitlines()]
    assert (f"{ENV}-staller-bash-dev", "--resume") in [(name, mode) for name, _url, mode in launches[2:]]


def test_a_score_saved_without_its_rewards_by_task_is_run_again_not_kept(tmp_path, monkeypatch):
    # probe.json written before the rules were paired by task has no rewards to pair: keeping such a
    # score would leave its rules undecidable, so the resumed probe runs the policy again.
    put_vf_eval_on_path(DYING_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    _scores, _results, report = _probe(out)
    saved = json.loads(report.read_text())
    for row in saved["scores"]:
        row.pop("rewards")
    report.write_text(json.dumps(saved))
    scores, _results, _report = _probe(out, resume=report.parent)
    launches = [json.loads(line) for line in (report.parent / "launches.jsonl").read_text().splitlines()]
    assert (f"{ENV}-staller-bash-dev", "--resume") in [(name, mode) for name, _url, mode in launches[2:]]
    assert {s.policy: s.rewards for s in scores} == {"staller": {"t0": [1.0]}, "oracle": {"t0": [1.0]}}


def test_the_report_names_the_task_secret_and_a_probe_made_under_another_is_not_resumed(tmp_path, monkeypatch):
    # A seed's task differs between task secrets: resuming would mix two sets of tasks in one gate.
    put_vf_eval_on_path(DYING_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    made_under = task_secret.fingerprint()
    _scores, _results, report = _probe(out)
    assert json.loads(report.read_text())["task_secret"] == made_under
    monkeypatch.setenv(task_secret.ENV, "another host's task secret")
    here = task_secret.fingerprint()
    assert here != made_under
    with pytest.raises(UsageError) as refused:
        _probe(out, resume=report.parent)
    message = str(refused.value)
    assert "\n" not in message
    assert made_under in message and here in message and "ARENA_TASK_SECRET" in message
    launches = (report.parent / "launches.jsonl").read_text().splitlines()
    assert len(launches) == 2, "nothing runs under the other secret"
