"""`EvalRequest.resume`: vf-eval continues a started run (`--resume`) and wipes nothing; a run that
never saved its config starts fresh (`--clean`); after an eval ends, the run's leftover containers
are removed. A fake `vf-eval` on PATH records how it was called."""

import json
import textwrap

from arena.evalrun import EvalRequest, run_eval, saved_server_url
from arena_testkit.fake_vf_eval import put_vf_eval_on_path

ARGV_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    run_dir = os.path.join(config["output_dir"], config["run"]["name"])
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(config["output_dir"], "argv.jsonl"), "a") as f:
        f.write(json.dumps(sys.argv[3:]) + "\\n")
    trace = {{"ok": True, "rewards": {{"r": {{"score": 1.0}}}}, "errors": [{{"type": "ProviderError", "message": "All connection attempts failed"}}]}}
    with open(os.path.join(run_dir, "traces.jsonl"), "w") as f:
        f.write(json.dumps({{"ok": True, "task": {{"data": {{"name": "t0"}}}}, "traces": [trace]}}) + "\\n")
    """
)


def _request(out, resume: bool) -> EvalRequest:
    return EvalRequest(
        taskset="t",
        harness="bash",
        model="m",
        image="img",
        base_url="http://127.0.0.1:4321",
        run_name="run",
        output_dir=out,
        resume=resume,
        agent_args={"runtime": {"type": "subprocess"}},
    )


def _save_config(out, base_url: str = "http://127.0.0.1:4321/v1") -> None:
    resolved = out / "run" / "configs" / "resolved"
    resolved.mkdir(parents=True)
    (resolved / "eval.json").write_text(json.dumps({"client": {"base_url": base_url}}))


def test_a_resumed_request_continues_a_started_run_and_a_fresh_one_wipes_it(tmp_path, monkeypatch):
    put_vf_eval_on_path(ARGV_VF_EVAL, tmp_path, monkeypatch)
    out = tmp_path / "out"
    run_eval(_request(out, resume=True), progress=lambda _line: None)  # nothing saved yet: a fresh start
    _save_config(out)
    run_eval(_request(out, resume=True), progress=lambda _line: None)
    run_eval(_request(out, resume=False), progress=lambda _line: None)
    modes = [json.loads(line)[-1] for line in (out / "argv.jsonl").read_text().splitlines()]
    assert modes == ["--clean", "--resume", "--clean"]


def test_an_episode_that_recovered_by_a_retry_is_scored_not_failed(tmp_path, monkeypatch):
    put_vf_eval_on_path(ARGV_VF_EVAL, tmp_path, monkeypatch)
    outcome = run_eval(_request(tmp_path / "out", resume=False), progress=lambda _line: None)
    assert (len(outcome.episodes), outcome.failures, outcome.retries, outcome.episodes[0].reward) == (1, [], 1, 1.0)
    outcome.raise_for_failures()


def test_the_saved_model_server_is_read_back_without_v1(tmp_path):
    assert saved_server_url(tmp_path / "run") is None
    _save_config(tmp_path, "http://127.0.0.1:40123/v1")
    assert saved_server_url(tmp_path / "run") == "http://127.0.0.1:40123"
