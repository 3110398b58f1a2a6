"""One trace reader: typed episodes with their rewards and rewrites, tolerant of a run cut short."""

import json
from pathlib import Path

import pytest

from arena.audit import build_report
from arena.errors import TraceError
from arena.evalrun import read_outcome
from arena.traces import read_traces, reward_of

RECORD = {
    "id": "r1",
    "run": "run1",
    "rollout": "t1",
    "harness": "bash",
    "environment": "env-a",
    "task": "a",
    "rule": "net-egress",
    "stage": "pre",
    "tool": "bash",
    "arguments": {"command": "curl http://x.io"},
    "original_sha256": "0" * 64,
    "original_excerpt": "",
    "replacement": "DENIED",
    "time": 1.0,
}


def _line(trace_id: str, score: float, rewrites: list[dict] | None = None) -> str:
    trace = {
        "id": trace_id,
        "ok": True,
        "stop_condition": "agent_completed",
        "calls": [{}],
        "rewards": {"r": {"score": score, "weight": 1.0}},
        "info": {"arena_rewrites": rewrites or []},
    }
    return json.dumps({"ok": True, "task": {"data": {"name": trace_id}}, "traces": [trace]})


def _run(tmp_path: Path, *lines: str, tail: str = "") -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "traces.jsonl").write_text("".join(line + "\n" for line in lines) + tail)
    return run


def test_a_truncated_last_line_is_skipped_and_reported_not_raised(tmp_path):
    run = _run(tmp_path, _line("t1", 1.0), tail=_line("t2", 0.5)[:40])
    outcome = read_outcome(run)
    assert [e.task for e in outcome.episodes] == ["t1"]
    assert outcome.skipped is not None and "line 2" in outcome.skipped and "cut short" in outcome.skipped


def test_audit_reads_a_run_whose_last_trace_line_was_cut_and_says_so(tmp_path):
    run = _run(tmp_path, _line("t1", 0.0, [RECORD]), tail='{"ok": tr')
    (run / "rewrites.jsonl").write_text(json.dumps({**RECORD, "id": "r2"}) + "\n" + '{"id": "r3", "ru')
    report = build_report(run)
    assert report.total == 2 and report.by_rule == {"net-egress": 2}
    assert [r["reward"] for r in report.rollouts] == [0.0]
    assert len(report.skipped) == 2 and all("cut short" in reason for reason in report.skipped)


def test_a_garbled_line_before_the_last_is_corruption_named_by_file_and_line(tmp_path):
    run = _run(tmp_path, _line("t1", 1.0), "not json", _line("t3", 1.0))
    with pytest.raises(TraceError, match=r"line 2 of .*traces.jsonl is not JSON.*corrupt"):
        read_traces(run)


def test_episodes_carry_typed_rewrites_and_the_trace_id(tmp_path):
    [episode] = read_traces(_run(tmp_path, _line("t1", 0.5, [RECORD]))).episodes
    assert (episode.id, episode.task, episode.reward, episode.turns, episode.failed) == ("t1", "t1", 0.5, 1, False)
    assert [(r.rule, r.rollout) for r in episode.rewrites] == [("net-egress", "t1")]


def test_the_reward_is_score_times_weight_summed_and_none_if_any_signal_failed():
    assert reward_of({"a": {"score": 0.5, "weight": 2.0}, "b": {"score": 0.25}}) == 1.25
    assert reward_of({"a": {"score": 1.0}, "b": {"score": None}}) is None
    assert reward_of({}) == 0.0


def test_a_missing_traces_file_is_no_episodes(tmp_path):
    log = read_traces(tmp_path)
    assert log.episodes == [] and not log.exists and log.skipped is None


def test_a_null_reward_signal_reads_as_no_reward_not_a_crash(tmp_path):
    from arena_testkit.synthetic_runs import episode_line

    run = _run(tmp_path, json.dumps(episode_line("t1", None, trace_id="a")))
    [episode] = read_traces(run).episodes
    assert episode.reward is None and episode.score == 0.0
    assert reward_of({"r": None}) is None and reward_of({"r": {"score": "1"}}) is None
    assert reward_of({"r": {"score": 1.0, "weight": float("inf")}}) is None


@pytest.mark.parametrize(
    "line",
    ['{"a": 1}', '{"traces": []}', '{"traces": ["x"]}', "[1, 2]", "3"],
    ids=["no-traces", "empty-traces", "traces-not-objects", "a-list", "a-number"],
)
def test_json_that_is_no_vf_eval_episode_is_refused_wherever_it_is(tmp_path, line):
    for lines in ((line,), (line, _line("t2", 1.0))):
        with pytest.raises(TraceError, match=r"line 1 of .*not a vf-eval episode"):
            read_traces(_run(tmp_path / str(len(lines)), *lines))


def test_a_traces_file_that_is_a_directory_is_a_trace_error(tmp_path):
    (tmp_path / "traces.jsonl").mkdir()
    with pytest.raises(TraceError, match="is a directory"):
        read_traces(tmp_path)


def test_invalid_utf8_and_odd_shapes_read_as_absent_fields(tmp_path):
    odd = {
        "ok": True,
        "task": "a string",
        "errors": "x",
        "traces": [{"rewards": "x", "calls": 3, "info": [], "timing": 1, "agent": "y", "stop_condition": 5}],
    }
    run = _run(tmp_path, _line("t1", 1.0)[:-1] + ', "note": "\xff"}', json.dumps(odd))
    (run / "traces.jsonl").write_bytes((run / "traces.jsonl").read_bytes().replace("\xff".encode(), b"\xff\xfe"))
    first, second = read_traces(run).episodes
    assert first.reward == 1.0
    assert (second.task, second.reward, second.turns, second.stop_condition, second.errors) == (
        "(no task name: line 2)",
        0.0,
        0,
        None,
        [],
    )


def test_a_follower_reads_completed_lines_and_leaves_a_write_in_progress(tmp_path):
    from arena.traces import TraceFollower

    path = tmp_path / "traces.jsonl"
    path.write_text(_line("t1", 1.0) + "\n" + _line("t2", 0.0)[:30])
    follower = TraceFollower(path)
    assert [line.episode.task for line in follower.read()] == ["t1"] and follower.skipped is None
    with path.open("a") as f:
        f.write(_line("t2", 0.0)[30:] + "\n" + _line("t3", 0.5) + "\n")
    lines = follower.read()
    assert [(line.number, line.episode.task) for line in lines] == [(2, "t2"), (3, "t3")]
    raw = path.read_bytes()
    assert json.loads(raw[lines[1].offset : lines[1].offset + lines[1].length])["task"]["data"]["name"] == "t3"
    assert follower.read() == []


def test_infrastructure_failures_are_left_out_of_the_mean_and_agent_faults_score_zero(tmp_path):
    from arena.traces import task_rewards

    def line(task: str, stop: str, ok: bool, score: float) -> str:
        row = json.loads(_line(task, score))
        row["ok"] = row["traces"][0]["ok"] = ok
        row["traces"][0]["stop_condition"] = stop
        return json.dumps(row)

    run = _run(
        tmp_path,
        line("a", "boxlost_error", False, 1.0),
        line("a", "agent_completed", True, 1.0),
        line("b", "boxoom_error", False, 1.0),
        line("c", "timeout_error", False, 1.0),
    )
    episodes = read_traces(run).episodes
    assert [e.score for e in episodes] == [None, 1.0, 0.0, 0.0]
    assert task_rewards(episodes) == {"a": [1.0], "b": [0.0], "c": [0.0]}


@pytest.mark.parametrize("limit", ["max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens"])
def test_an_agent_that_reaches_a_rollout_limit_is_scored_not_failed(tmp_path, limit):
    """verifiers.v1 names the limit an agent reached (`RolloutLimits.reached`) as the stop condition
    and still scores the rollout: the agent's outcome, not a failed episode the gate refuses."""
    row = json.loads(_line("a", 0.25))
    row["traces"][0]["stop_condition"] = limit
    (episode,) = read_traces(_run(tmp_path, json.dumps(row))).episodes
    assert not episode.failed and episode.score == 0.25
