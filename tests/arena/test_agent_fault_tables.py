"""An episode the agent ended by breaking its own box (`arena.traces.AGENT_STOPS`) is the agent's:
scored 0, not a failed or infrastructure episode, and counted as the agent's in the probe and demo tables."""

import json

from arena.demo import render_rows
from arena.evalrun import read_outcome
from arena.probe import gate, render_table, score_outcome


def _line(name: str, stop: str, ok: bool, error: str | None = None, score: float = 1.0) -> str:
    trace = {
        "id": name,
        "ok": ok,
        "stop_condition": stop,
        "calls": [{}],
        "rewards": {"r": {"score": score, "weight": 1.0}},
        "errors": [{"type": error, "message": "m"}] if error else [],
    }
    return json.dumps({"ok": ok, "task": {"data": {"name": name}}, "traces": [trace]})


def _run(tmp_path, *lines: str):
    run = tmp_path / "run"
    run.mkdir()
    (run / "traces.jsonl").write_text("".join(line + "\n" for line in lines))
    return read_outcome(run)


def test_an_agent_fault_scores_zero_and_is_the_agents_not_a_failure(tmp_path):
    outcome = _run(
        tmp_path,
        _line("a", "agent_completed", True),
        _line("b", "boxoom_error", False, "BoxOomError", 1.0),
        _line("c", "agentkilledbox_error", False, "AgentKilledBoxError"),
        _line("d", "harness_error", False, "HarnessError"),
        _line("e", "boxlost_error", False, "BoxLostError"),
    )
    by = {e.task: e for e in outcome.episodes}
    assert [by[t].agent_fault for t in "bc"] == ["box out of memory", "agent killed its box's processes"]
    assert by["b"].reward == 0.0  # whatever its signals read
    assert [e.task for e in outcome.failures] == ["d", "e"] and [e.task for e in outcome.infra_failures] == ["e"]
    assert [e.task for e in outcome.agent_faults] == ["b", "c"]


def test_the_probe_and_demo_tables_count_agent_faults_apart_from_failures(tmp_path):
    outcome = _run(
        tmp_path,
        _line("a", "agent_completed", True, score=0.0),
        _line("b", "agentkilledbox_error", False, "AgentKilledBoxError"),
    )
    score = score_outcome("env-a", "staller", outcome)
    assert (score.failed, score.agent_faults, score.mean) == (0, 1, 0.0)
    header, row = render_table([score]).splitlines()[:2]
    columns, cells = header.split(), row.split()
    assert (cells[columns.index("agent")], cells[columns.index("failed")]) == ("1", "0")
    assert not [
        f for f in gate([score]) if f.rule == "episodes-ran" and f.status != "met"
    ]  # the agent's end is a result, not a failed run
    header, row = render_rows([("env-a", "staller", outcome, 1.0)]).strip().splitlines()[:2]
    columns = header.split()
    assert columns[3:6] == ["failed", "infra", "agent"] and row.split()[3:6] == ["0", "0", "1"]
