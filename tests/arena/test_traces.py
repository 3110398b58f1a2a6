"""One trace reader: typed episodes with their rewards and rewrites, tolerant of a run cut short."""

import json
from pathlib import Path

import pytest

from arena.audit import build_report
from arena.errors import TraceError
from arena.evalrun import read_outcome
from arena.traces import read_traces, reward_of

RECORD = {
    "id": "r1", "run": "run1", "rollout": "t1", "harness": "bash", "environment": "env-a", "task": "a",
    "rule": "net-egress", "stage": "pre", "tool": "bash", "arguments": {"command": "curl http://x.io"},
    "original_sha256": "0" * 64, "original_excerpt": "", "replacement": "DENIED", "time": 1.0,
}


def _line(trace_id: str, score: float, rewrites: list[dict] | None = None) -> str:
    trace = {"id": trace_id, "ok": True, "stop_condition": "agent_completed", "calls": [{}],
             "rewards": {"r": {"score": score, "weight": 1.0}}, "info": {"arena_rewrites": rewrites or []}}
    return json.dumps({"ok": True, "task": {"data": {"name": trace_id}}, "traces": [trace]})


def _run(tmp_path: Path, *lines: str, tail: str = "") -> Path:
    run = tmp_path / "run"
    run.mkdir()
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
