"""What `arena view` reads: runs found under a directory (and new ones as they appear), followed as
their traces grow; each run's one mean (the same as the statistics interface gives for its task
rewards), infrastructure failures beside it, pass@k; transcripts with parsed arguments, per-turn
tokens and times and a timeline; search; paired tests; prices; a corrupt run kept apart; and an
export whose blocks no trace string can break out of."""

import base64
import json
import math
import re
import zlib

import pytest

from arena.errors import PrerequisiteError
from arena.traces import read_traces, task_rewards
from arena.view import export_html, load_catalog
from arena.view.page import json_block, to_json
from arena_kit.gate.stats import estimate, holm, paired_test
from arena_testkit.synthetic_runs import HOSTILE, episode_line, real_variant, rewrite_record, simple_run, write_run


def _append(run, rows):
    with (run / "traces.jsonl").open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def test_the_fixture_lines_are_verifiers_episodes():
    from verifiers.v1.episode import Episode

    episode = Episode.model_validate(episode_line("t1", 1.0, trace_id="a", denied=True))
    assert len(episode.traces[0].nodes) == 7 and episode.traces[0].info["arena_rewrites"][0]["rule"] == "net-egress"


def test_runs_are_found_in_a_run_dir_or_the_directory_holding_them_and_new_ones_appear(tmp_path):
    simple_run(tmp_path / "out" / "a", {"t1": [1.0]})
    simple_run(tmp_path / "out" / "b", {"t1": [0.0]})
    assert list(load_catalog([tmp_path / "out"]).runs) == ["a", "b"]
    assert list(load_catalog([tmp_path / "out" / "b"]).runs) == ["b"]
    catalog = load_catalog([tmp_path])  # two levels down
    assert len(catalog.runs) == 2
    generation = catalog.generation
    simple_run(tmp_path / "out" / "c", {"t1": [1.0]})
    assert catalog.refresh() and list(catalog.runs) == ["a", "b", "c"] and catalog.generation == generation + 1
    with pytest.raises(PrerequisiteError, match="no traces.jsonl"):
        load_catalog([tmp_path / "out" / "a" / "configs"])


def test_two_runs_of_one_name_get_stable_distinct_ids(tmp_path):
    simple_run(tmp_path / "x" / "run", {"t1": [1.0]})
    simple_run(tmp_path / "y" / "run", {"t1": [1.0]})
    first = list(load_catalog([tmp_path / "x", tmp_path / "y"]).runs)
    assert (
        first[0] == "run"
        and first[1].startswith("run~")
        and first == list(load_catalog([tmp_path / "x", tmp_path / "y"]).runs)
    )


def test_a_run_shows_one_mean_the_mean_over_tasks_of_each_tasks_mean(tmp_path):
    """Two rollouts of task a score 1, one of task b scores 0: 0.5 over tasks, not 0.667 over episodes."""
    rows = [
        episode_line("a", 1.0, trace_id="1"),
        episode_line("a", 1.0, trace_id="2"),
        episode_line("b", 0.0, trace_id="3"),
    ]
    run = write_run(tmp_path / "r", rows)
    s = load_catalog([run]).runs["r"].summary()
    expected = estimate(task_rewards(read_traces(run).episodes))
    assert s["mean"] == pytest.approx(0.5) == pytest.approx(expected.mean)
    assert (s["low"], s["high"], s["lower"], s["upper"]) == pytest.approx(
        (expected.low, expected.high, expected.lower, expected.upper), abs=1e-6
    )
    assert s["ci"] == expected.text() and s["method"] == expected.method and s["scored_tasks"] == 2


def test_infrastructure_failures_are_left_out_of_the_mean_and_counted_beside_it_agent_faults_score_zero(tmp_path):
    rows = [
        episode_line("a", 1.0, trace_id="1"),
        episode_line("b", 1.0, trace_id="2", ok=False, stop="boxlost_error"),
        episode_line("c", 1.0, trace_id="3", ok=False, stop="boxoom_error"),
        episode_line("d", 1.0, trace_id="4", ok=False, stop="timeout_error"),
    ]
    run = load_catalog([write_run(tmp_path / "r", rows)]).runs["r"]
    s = run.summary()
    assert (s["infra"], s["infra_rate"], s["failures"], s["agent_faults"]) == (1, 0.25, 1, 1)
    assert s["mean"] == pytest.approx(1 / 3) and s["scored_tasks"] == 3
    assert [r["score"] for r in run.rows] == [1.0, None, 0.0, 0.0] and run.rows[1]["infra"]


def test_pass_at_k_is_shown_where_every_task_has_several_rollouts(tmp_path):
    run = simple_run(tmp_path / "r", {"a": [1.0, 0.0, 0.0], "b": [1.0, 1.0, 1.0]})
    passes = {p["k"]: p for p in load_catalog([run]).runs["r"].summary()["pass"]}
    assert sorted(passes) == [1, 2, 3]
    assert (
        passes[1]["at"] == pytest.approx((1 / 3 + 1) / 2)
        and passes[3]["at"] == 1.0
        and passes[3]["all"] == pytest.approx(0.5)
    )
    assert load_catalog([simple_run(tmp_path / "s", {"a": [1.0]})]).runs["s"].summary()["pass"] == []


def test_a_growing_run_is_followed_line_by_line_and_marked_running(tmp_path):
    run = write_run(tmp_path / "r", [episode_line("a", 1.0, trace_id="1")])
    catalog = load_catalog([run])
    view = catalog.runs["r"]
    assert view.summary()["status"] == "running"  # just written, no end marker
    _append(run, [episode_line("b", 0.0, trace_id="2")])
    with (run / "traces.jsonl").open("a") as f:
        f.write(json.dumps(episode_line("c", 1.0, trace_id="3"))[:50])  # a write in progress
    assert catalog.refresh() and [r["task"] for r in view.rows] == ["a", "b"]
    assert catalog.rows("r", start=1)["rows"][0]["task"] == "b"
    with (run / "traces.jsonl").open("a") as f:
        f.write(json.dumps(episode_line("c", 1.0, trace_id="3"))[50:] + "\n")
    catalog.refresh()
    assert [r["task"] for r in view.rows] == ["a", "b", "c"] and catalog.episode("r", 2)["row"]["task"] == "c"
    (run / "vf-eval.log").write_text("done\n")
    assert view.summary()["status"] == "complete"


def test_a_corrupt_run_is_kept_apart_with_its_problem_and_the_others_open(tmp_path):
    simple_run(tmp_path / "o" / "good", {"t1": [1.0]})
    bad = tmp_path / "o" / "bad"
    bad.mkdir(parents=True)
    (bad / "traces.jsonl").write_text("garbage\n" + json.dumps(episode_line("t", 1.0, trace_id="x")) + "\n")
    catalog = load_catalog([tmp_path / "o"])
    assert catalog.runs["good"].summary()["mean"] == 1.0 and not catalog.runs["good"].problem
    assert "line 1" in catalog.runs["bad"].problem and catalog.runs["bad"].summary()["status"] == "broken"


def test_a_transcript_has_parsed_arguments_per_turn_tokens_and_times_and_the_denial_inline(tmp_path):
    row = episode_line("a", 0.0, trace_id="1", denied=True)
    trace = row["traces"][0]
    trace["calls"][0]["usage"] = {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "cached_input_tokens": 40,
        "reasoning_tokens": 0,
    }
    trace["num_input_tokens"], trace["num_output_tokens"] = 300, 20
    catalog = load_catalog([write_run(tmp_path / "r", [row])])
    assert "items" not in json.dumps(catalog.index())
    page = catalog.episode("r", 0)
    kinds = [item["kind"] for item in page["items"]]
    assert kinds == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    asked = page["items"][2]
    assert (
        asked["calls"][0]["args"] == {"command": "grep ERROR /var/log/app.log"}
        and asked["usage"]["prompt_tokens"] == 100
    )
    assert asked["model"]["end"] - asked["model"]["start"] == pytest.approx(0.5)
    result = page["items"][3]
    assert result["call"] == "bash" and result["t"] - result["asked"] == pytest.approx(1.0)
    denied = page["items"][5]
    assert denied["rewrite"]["rule"] == "net-egress" and denied["rewrite"]["denial"]
    lanes = {span["lane"] for span in page["timeline"]}
    assert lanes == {"phase", "model", "tool", "gate"}
    assert page["row"]["tokens_in"] == 100 and page["row"]["tokens_out"] == 7  # summed over the calls' usage
    assert catalog.runs["r"].summary()["tokens_in"] == 100


def test_arguments_that_are_not_a_json_object_are_kept_as_written(tmp_path):
    row = episode_line("a", 0.0, trace_id="1")
    row["traces"][0]["nodes"][2]["message"]["tool_calls"][0]["arguments"] = "SELECT 1;\n-- not json"
    call = load_catalog([write_run(tmp_path / "r", [row])]).episode("r", 0)["items"][2]["calls"][0]
    assert call["args"] is None and call["text"] == "SELECT 1;\n-- not json"


def test_a_rewrite_with_no_matching_result_is_placed_at_its_time(tmp_path):
    row = episode_line("a", 0.0, trace_id="1")
    row["traces"][0]["info"]["arena_rewrites"] = [
        rewrite_record(1, "1", "a", rule="held-out-leak", stage="post", replacement="[withheld]", time=1_700_000_001.5)
    ]
    items = load_catalog([write_run(tmp_path / "r", [row])]).episode("r", 0)["items"]
    assert [i["kind"] for i in items][2:5] == ["assistant", "rewrite", "tool"] and items[3]["rule"] == "held-out-leak"


def test_search_finds_episodes_by_what_their_transcripts_say(tmp_path):
    rows = [
        episode_line("a", 1.0, trace_id="1", tool_output="Disk FULL on payments-db"),
        episode_line("b", 1.0, trace_id="2"),
        episode_line("c", 1.0, trace_id="3", assistant_text="the payments-db disk"),
    ]
    catalog = load_catalog([write_run(tmp_path / "r", rows)])
    assert catalog.search("r", "PAYMENTS-DB") == [{"i": 0, "hits": 1}, {"i": 2, "hits": 1}]
    assert [h["i"] for h in catalog.search("r", "grep error /var")] == [0, 1, 2]  # a tool call's argument, unescaped
    _append(tmp_path / "r", [episode_line("d", 1.0, trace_id="4", tool_output="payments-db again")])
    catalog.refresh()
    assert [h["i"] for h in catalog.search("r", "payments-db")] == [0, 2, 3]


def test_paired_tests_of_runs_come_from_the_statistics_interface(tmp_path):
    simple_run(tmp_path / "o" / "a", {"t1": [1.0], "t2": [1.0], "t3": [0.0], "t4": [1.0]})
    simple_run(tmp_path / "o" / "b", {"t1": [0.0], "t2": [0.0], "t3": [0.0], "t4": [1.0]})
    simple_run(tmp_path / "o" / "c", {"x": [1.0]})
    catalog = load_catalog([tmp_path / "o"])
    [pair] = catalog.pairs(["a", "b", "c"])
    expected = paired_test(
        {"t1": [1.0], "t2": [1.0], "t3": [0.0], "t4": [1.0]}, {"t1": [0.0], "t2": [0.0], "t3": [0.0], "t4": [1.0]}
    )
    assert (pair["a"], pair["b"], pair["tasks"], pair["wins"], pair["losses"], pair["ties"]) == ("a", "b", 4, 0, 2, 2)
    assert pair["diff"] == pytest.approx(expected.difference) and pair["p"] == pytest.approx(expected.p_value)
    assert holm([0.5, 0.01]) == pytest.approx([0.5, 0.02])  # what the compare page's Holm is held to


def test_costs_come_from_a_prices_file_and_a_bad_one_is_a_warning(tmp_path):
    row = episode_line("a", 1.0, trace_id="1")
    row["traces"][0]["calls"][0]["usage"] = {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 500_000,
        "cached_input_tokens": 200_000,
    }
    run = write_run(tmp_path / "o" / "r", [row])
    assert load_catalog([run]).runs["r"].rows[0]["cost"] is None
    (tmp_path / "o" / "prices.toml").write_text(
        '[models."arena/fault-localisation/oracle"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n'
    )
    view = load_catalog([run]).runs["r"]
    assert view.rows[0]["cost"] == pytest.approx(0.8 * 2.0 + 0.2 * 0.5 + 0.5 * 8.0)
    assert view.summary()["cost"] == pytest.approx(5.7) and view.summary()["priced"]
    (tmp_path / "o" / "prices.toml").write_text("[models.x]\ninput = 'free'\n")
    assert "not a prices file" in load_catalog([run]).runs["r"].summary()["warning"]


def test_hostile_shapes_invalid_utf8_nan_and_huge_results_stay_data(tmp_path):
    rows = [
        episode_line("a", 1.0, trace_id="1", tool_output=HOSTILE, result_chars=10_000_000),
        episode_line("b", 1.0, trace_id="2"),
    ]
    run = write_run(tmp_path / "r", rows)
    raw = (run / "traces.jsonl").read_bytes().replace(b'"I will query the log."', b'"bad \xff\xfe bytes"', 1)
    raw = raw.replace(b'"queries_used": 1.0}', b'"queries_used": NaN}', 1)
    (run / "traces.jsonl").write_bytes(raw)
    catalog = load_catalog([run])
    page = catalog.episode("r", 0)
    assert len(page["items"][3]["text"]) > 10_000_000 and "\ufffd" in page["items"][2]["text"]
    assert page["metrics"]["queries_used"] is None
    json.loads(to_json(page))  # strict JSON: what a browser parses


def test_data_blocks_cannot_close_their_script_element():
    block = json_block("x", {"s": HOSTILE + "</script><script>alert(1)</script>\u2028", "n": math.nan})
    inner = block[len('<script type="application/json" id="x">') : -len("</script>\n")]
    assert "<" not in inner and ">" not in inner and "&" not in inner
    assert json.loads(inner)["s"].startswith("<script>") and json.loads(inner)["n"] is None


def _blocks(html: str) -> dict[str, tuple[dict[str, str], str]]:
    found = re.findall(r'<script type="application/x-arena-deflate" id="([^"]+)"([^>]*)>([^<]*)</script>', html)
    return {i: (dict(re.findall(r'data-(\w+)="([^"]*)"', attrs)), body) for i, attrs, body in found}


def _inflate(blocks: dict[str, tuple[dict[str, str], str]], name: str) -> object:
    attrs, body = blocks[name]
    data = base64.b64decode(body)
    if "preset" in attrs:
        preset_attrs, preset = blocks[attrs["preset"]]
        data = zlib.decompress(base64.b64decode(preset) + data, -15)[int(preset_attrs["skip"]) :]
    else:
        data = zlib.decompress(data, -15)
    return json.loads(data)


def test_the_export_is_one_file_with_compressed_transcripts_and_a_policy_that_pins_its_scripts(tmp_path):
    run = write_run(
        tmp_path / "r",
        [episode_line("a", 1.0, trace_id="1", tool_output=HOSTILE), episode_line("b", 0.0, trace_id="2")],
    )
    out = tmp_path / "view.html"
    size = export_html([run], out)
    html = out.read_text()
    assert size == len(html.encode()) and "pwned" not in html and "<img" not in html
    blocks = _blocks(html)
    assert sorted(blocks) == ["ep-0-0", "ep-0-1", "preset-0", "run-0"]
    assert (
        _inflate(blocks, "ep-0-0")["items"][3]["text"] == HOSTILE and _inflate(blocks, "ep-0-1")["row"]["task"] == "b"
    )
    assert [r["task"] for r in _inflate(blocks, "run-0")["rows"]] == ["a", "b"]
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert (
        "default-src 'none'" in csp and csp.count("'sha256-") == 7 and "unsafe" not in csp and "connect-src" not in csp
    )


@pytest.mark.slow
def test_an_export_of_a_thousand_demo_sized_episodes_is_under_ten_megabytes(tmp_path):
    run = write_run(tmp_path / "big", [real_variant(i, float(i % 2)) for i in range(1000)])
    assert export_html([run], tmp_path / "big.html") < 10_000_000


def test_a_dozen_malformed_runs_open_and_each_broken_one_is_named(tmp_path):
    from arena_testkit.malformed_runs import GOOD, make_malformed

    folder = make_malformed(tmp_path / "malformed")
    catalog = load_catalog([folder])
    broken = {rid for rid, run in catalog.runs.items() if run.problem}
    assert broken == {"traces-a-folder", "not-episodes", "garbled-middle", "nested", "a-device"}
    assert {rid for rid, run in catalog.runs.items() if run.rows} == set(GOOD)
    assert (
        catalog.runs["cut-short"].summary()["warning"] == ""
        or "incomplete" in catalog.runs["cut-short"].summary()["warning"]
    )
    json.loads(to_json(catalog.index()))
    for rid in GOOD:
        for i in range(len(catalog.runs[rid].rows)):
            json.loads(to_json(catalog.episode(rid, i)))
        catalog.search(rid, "query")
    assert catalog.runs["nan-and-odd-timing"].rows[0]["reward"] is None  # an infinite score is no score
    assert export_html([folder], tmp_path / "malformed.html") > 0


def test_a_run_started_again_with_clean_is_read_anew(tmp_path):
    run = write_run(tmp_path / "r", [episode_line(t, 1.0, trace_id=t) for t in ("a", "b", "c")])
    catalog = load_catalog([run])
    assert catalog.search("r", "incident a") == [{"i": 0, "hits": 1}]
    write_run(run, [episode_line("z", 0.0, trace_id="z")])  # shorter: vf-eval --clean started it again
    catalog.refresh()
    assert [r["task"] for r in catalog.runs["r"].rows] == ["z"] and not catalog.runs["r"].problem
    assert catalog.rows("r", start=3)["count"] == 1 and catalog.search("r", "incident z") == [{"i": 0, "hits": 1}]


def test_a_probe_the_gate_left_undecided_is_not_shown_as_passed(tmp_path):
    import json

    from arena.view.probes import probe_gate

    report = {
        "complete": True,
        "gate": "undecided",
        "harness": "bash",
        "split": "dev",
        "tasks": 2,
        "scores": [
            {"env": "e", "policy": "oracle", "mean": 1.0, "low": 0.16, "high": 1.0, "lower": 0.22, "upper": 1.0}
        ],
        "rules": [
            {
                "env": "e",
                "rule": "oracle-reaches-ceiling",
                "status": "undecided",
                "detail": "lower bound 0.224",
                "tasks_needed": 29,
            }
        ],
        "failures": [],
    }
    (tmp_path / "probe.json").write_text(json.dumps(report))
    gate = probe_gate(tmp_path)
    assert gate["gate"] == "undecided" and not gate["passed"]
    assert gate["undecided"][0]["rule"] == "oracle-reaches-ceiling" and "29 tasks" in gate["undecided"][0]["detail"]
    assert gate["scores"][0]["lower"] == 0.22


def test_an_older_probe_report_without_a_gate_field_reads_its_failures(tmp_path):
    import json

    from arena.view.probes import probe_gate

    (tmp_path / "probe.json").write_text(json.dumps({"complete": True, "scores": [], "failures": []}))
    assert probe_gate(tmp_path)["gate"] == "passed"
