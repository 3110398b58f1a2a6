"""`arena demo --resume` finishes the newest demo: the same run names, `vf-eval --resume`, and the
model server on the port the demo first used. A fake `vf-eval` on PATH records each launch."""

import json
import textwrap

import pytest

from arena.cli import main
from arena_testkit.fake_vf_eval import put_vf_eval_on_path

RECORDING_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    run_dir = os.path.join(config["output_dir"], config["run"]["name"])
    os.makedirs(os.path.join(run_dir, "configs", "resolved"), exist_ok=True)
    json.dump(config, open(os.path.join(run_dir, "configs", "resolved", "eval.json"), "w"))
    with open(os.path.join(config["output_dir"], "launches.jsonl"), "a") as f:
        f.write(json.dumps([config["run"]["name"], config["client"]["base_url"], sys.argv[-1]]) + "\\n")
    trace = {{"ok": True, "rewards": {{"r": {{"score": 1.0}}}}}}
    with open(os.path.join(run_dir, "traces.jsonl"), "w") as f:
        f.write(json.dumps({{"ok": True, "task": {{"data": {{"name": "t0"}}}}, "traces": [trace]}}) + "\\n")
    """
)


@pytest.mark.slow
def test_a_resumed_demo_continues_the_same_runs_on_the_same_server(tmp_path, monkeypatch, capsys):
    put_vf_eval_on_path(RECORDING_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    assert main(["demo", "--skip-build", "--output-dir", str(out)]) == 0
    assert main(["demo", "--skip-build", "--resume", "--output-dir", str(out)]) == 0
    launches = [json.loads(line) for line in (out / "launches.jsonl").read_text().splitlines()]
    half = len(launches) // 2
    first, resumed = launches[:half], launches[half:]
    assert (
        half >= 2
        and {mode for *_rest, mode in first} == {"--clean"}
        and {mode for *_rest, mode in resumed} == {"--resume"}
    )
    assert [name for name, *_rest in resumed] == [name for name, *_rest in first]
    assert len({url for _name, url, _mode in launches}) == 1


def test_resuming_a_demo_that_never_ran_is_a_usage_error(tmp_path, capsys):
    assert main(["demo", "--skip-build", "--resume", "--output-dir", str(tmp_path)]) == 2
    assert "no bash demo to resume" in capsys.readouterr().err
