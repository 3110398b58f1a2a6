"""What `arena view` reads: runs found under a directory, their summaries with intervals, one row
per episode, transcripts on demand with rewrites inline, probe gates, paired comparisons, and an
export whose data blocks no trace string can break out of."""

import json
import re

import pytest

from arena.errors import PrerequisiteError
from arena.stats import clustered_mean
from arena.view import export_html, load_catalog
from arena.view.page import json_block
from arena_testkit.synthetic_runs import HOSTILE, episode_line, rewrite_record, simple_run, write_run


def test_the_fixture_lines_are_verifiers_episodes():
    from verifiers.v1.episode import Episode

    episode = Episode.model_validate(episode_line("t1", 1.0, trace_id="a", denied=True))
    assert len(episode.traces[0].nodes) == 7 and episode.traces[0].info["arena_rewrites"][0]["rule"] == "net-egress"


def test_runs_are_found_in_a_run_dir_or_the_directory_holding_them(tmp_path):
    simple_run(tmp_path / "out" / "a", {"t1": [1.0]})
    simple_run(tmp_path / "out" / "b", {"t1": [0.0]})
    assert [r.summary["name"] for r in load_catalog([tmp_path / "out"]).runs] == ["a", "b"]
    assert [r.summary["name"] for r in load_catalog([tmp_path / "out" / "b"]).runs] == ["b"]
    assert len(load_catalog([tmp_path]).runs) == 2  # two levels down
    with pytest.raises(PrerequisiteError, match="holds no traces.jsonl"):
        load_catalog([tmp_path / "out" / "a" / "configs"])


def test_a_run_summary_carries_its_config_counts_and_clustered_interval(tmp_path):
    rows = [episode_line("a", 1.0, trace_id="1"), episode_line("a", 1.0, trace_id="2", denied=True),
            episode_line("b", 0.0, trace_id="3"), episode_line("c", 1.0, trace_id="4", ok=False, errors=[{"type": "X", "message": "box died"}])]
    run = load_catalog([write_run(tmp_path / "r", rows, model="arena/fault-localisation/oracle")]).runs[0]
    s = run.summary
    expected = clustered_mean([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "c"])
    assert (s["env"], s["harness"], s["policy"], s["split"], s["count"], s["tasks"]) == ("fault-localisation", "bash", "oracle", "dev", 4, 3)
    assert s["mean"] == pytest.approx(0.5) and s["high"] == pytest.approx(expected.high, abs=1e-4)
    assert (s["failures"], s["denials"], s["rewrites"], s["budget"]) == (1, 1, 0, 20.0)
    row = run.episodes[3]
    assert (row["failed"], row["reward"], row["score"], row["errors"], row["error"]) == (True, 1.0, 0.0, 1, "box died")
    assert run.episodes[0]["reason"] == "named the root cause" and run.episodes[0]["parts"]["efficiency"] == 1.0


def test_a_transcript_is_read_on_demand_with_tool_calls_results_and_the_denial_inline(tmp_path):
    catalog = load_catalog([write_run(tmp_path / "r", [episode_line("a", 0.0, trace_id="1", denied=True)])])
    assert "items" not in json.dumps(catalog.index())
    page = catalog.transcript(0, 0)
    kinds = [item["kind"] for item in page["items"]]
    assert kinds == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    first_call = page["items"][2]["calls"][0]
    assert first_call["name"] == "bash" and "grep ERROR" in first_call["arguments"]
    denied = page["items"][5]
    assert denied["call"] == "bash" and denied["rewrite"]["rule"] == "net-egress" and denied["rewrite"]["denial"]
    assert page["grade"]["reason"] == "named the root cause" and page["submission"]["service"] == "db"
    assert [p["phase"] for p in page["timing"]][:3] == ["boot", "setup", "agent"]


def test_a_rewrite_with_no_matching_result_is_placed_at_its_time(tmp_path):
    row = episode_line("a", 0.0, trace_id="1")
    row["traces"][0]["info"]["arena_rewrites"] = [rewrite_record(1, "1", "a", rule="held-out-leak", stage="post",
                                                                 replacement="[withheld]", time=1_700_000_001.5)]
    items = load_catalog([write_run(tmp_path / "r", [row])]).transcript(0, 0)["items"]
    assert [i["kind"] for i in items][2:5] == ["assistant", "rewrite", "tool"] and items[3]["rule"] == "held-out-leak"


def test_a_probe_directory_shows_its_gate_and_the_rule_that_failed(tmp_path):
    probe = tmp_path / "probe-1"
    simple_run(probe / "fl-oracle-bash-dev", {"t1": [1.0]})
    (probe / "probe.json").write_text(json.dumps({"harness": "bash", "split": "dev", "tasks": 1, "complete": True,
        "scores": [{"env": "fl", "policy": "oracle", "role": "standard", "mean": 0.5, "ci95": None}],
        "failures": [{"env": "fl", "rule": "oracle-reaches-ceiling", "detail": "oracle mean 0.500 < 0.98"}]}))
    [gate] = load_catalog([probe]).probes
    assert not gate["passed"] and gate["failures"][0]["rule"] == "oracle-reaches-ceiling" and gate["scores"][0]["policy"] == "oracle"


def test_runs_sharing_tasks_are_paired(tmp_path):
    simple_run(tmp_path / "o" / "a", {"t1": [1.0], "t2": [1.0], "t3": [0.0]})
    simple_run(tmp_path / "o" / "b", {"t1": [0.0], "t2": [0.0], "t3": [0.0]})
    simple_run(tmp_path / "o" / "c", {"x": [1.0]})
    [pair] = load_catalog([tmp_path / "o"]).pairs
    assert (pair["a"], pair["b"], pair["tasks"], pair["differing"]) == (0, 1, 3, ["t1", "t2"])
    assert pair["diff"] == pytest.approx(-2 / 3, abs=1e-4) and pair["low"] < pair["diff"] < pair["high"]


def test_data_blocks_cannot_close_their_script_element():
    block = json_block("x", {"s": HOSTILE + "</script><script>alert(1)</script>\u2028"})
    inner = block[len('<script type="application/json" id="x">'):-len("</script>\n")]
    assert "<" not in inner and ">" not in inner and "&" not in inner
    assert json.loads(inner)["s"].startswith("<script>")


def test_the_export_is_one_file_with_a_policy_that_pins_its_own_script(tmp_path):
    run = write_run(tmp_path / "r", [episode_line("a", 1.0, trace_id="1", tool_output=HOSTILE)])
    out = tmp_path / "view.html"
    size = export_html([run], out)
    html = out.read_text()
    assert size == len(html.encode()) and html.count("<script") == 3  # the index, one transcript, the app
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp and "unsafe" not in csp
    assert "pwned" in html and "<img" not in html
