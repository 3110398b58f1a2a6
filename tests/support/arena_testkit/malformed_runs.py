"""A dozen malformed runs, each broken a different way a reviewer (or a crash, or another version
of verifiers) could break one: what the viewer, `compare` and `audit` must name or show, never crash
on. `make_malformed(folder)` writes them; `GOOD` are those that must still open with episodes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arena_testkit.synthetic_runs import HOSTILE, episode_line, write_run

GOOD = ("odd-shapes", "cut-short", "bad-utf8", "nan-and-odd-timing", "bad-config", "hostile-everywhere")
"""Runs that open with their episodes (perhaps with a warning); every other one is named as broken."""


def _odd_shapes() -> list[dict[str, Any]]:
    rows = [episode_line("a", 1.0, trace_id="o1"), episode_line("b", 0.0, trace_id="o2")]
    trace = rows[0]["traces"][0]
    trace["nodes"] = [
        "a string",
        {"message": "not an object"},
        {"message": {"role": "assistant", "tool_calls": "x", "content": 5}},
        {"message": {"role": "assistant", "tool_calls": [{"id": 1, "name": None, "arguments": [1, 2]}]}},
        {
            "message": {
                "role": "tool",
                "tool_call_id": 1,
                "content": [{"type": "image"}, {"type": "text", "text": "hi"}],
            }
        },
    ]
    trace["calls"] = [{"node": "2", "time": "later", "usage": "lots"}, 7]
    trace["rewards"] = {"r": [1]}
    trace["info"] = {"grade": "a string", "submission": [1, {"a": None}], "arena_rewrites": []}
    rows[1]["task"] = "a string"
    rows[1]["traces"][0]["metrics"] = [1, 2]
    return rows


def make_malformed(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty").mkdir()
    (folder / "empty" / "traces.jsonl").write_text("")
    (folder / "traces-a-folder" / "traces.jsonl").mkdir(parents=True)
    (folder / "not-episodes").mkdir()
    (folder / "not-episodes" / "traces.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    garbled = folder / "garbled-middle"
    write_run(garbled, [episode_line("a", 1.0, trace_id="g1")])
    with (garbled / "traces.jsonl").open("a") as f:
        f.write("{not json\n" + json.dumps(episode_line("b", 1.0, trace_id="g2")) + "\n")
    (folder / "nested").mkdir()
    (folder / "nested" / "traces.jsonl").write_text("[" * 200_000 + "]" * 200_000 + "\n")
    (folder / "a-device").mkdir()
    os.symlink("/dev/zero", folder / "a-device" / "traces.jsonl")
    write_run(folder / "odd-shapes", _odd_shapes())
    cut = write_run(folder / "cut-short", [episode_line("a", 1.0, trace_id="c1")])
    with (cut / "traces.jsonl").open("a") as f:
        f.write(json.dumps(episode_line("b", 1.0, trace_id="c2"))[:80])
    utf = write_run(
        folder / "bad-utf8",
        [episode_line("a\udcff".encode("utf-8", "surrogateescape").decode("utf-8", "replace"), 1.0, trace_id="u1")],
    )
    (utf / "traces.jsonl").write_bytes(
        (utf / "traces.jsonl").read_bytes().replace(b"I will query", b"\xc3\x28\xa0\xa1 query")
    )
    nan = write_run(folder / "nan-and-odd-timing", [episode_line("a", 1.0, trace_id="n1")])
    text = (
        (nan / "traces.jsonl")
        .read_text()
        .replace('"queries_used": 1.0', '"queries_used": NaN')
        .replace('"start": 1700000000.0,', '"start": "noon",', 1)
    )
    (nan / "traces.jsonl").write_text(text.replace('"score": 1.0, "weight"', '"score": Infinity, "weight"', 1))
    bad_config = write_run(folder / "bad-config", [episode_line("a", 1.0, trace_id="b1")])
    (bad_config / "configs" / "resolved" / "eval.json").write_text(
        '{"model": {"x": 1}, "select": {"limit": "many"}, "env": [1]}'
    )
    write_run(
        folder / "hostile-everywhere",
        [episode_line(HOSTILE, 1.0, trace_id="h1", reason=HOSTILE, tool_output=HOSTILE)],
        model=HOSTILE,
    )
    (folder / "probe-garbage").mkdir()
    (folder / "probe-garbage" / "probe.json").write_text('{"scores": "x", "failures": [1], "tasks": NaN}')
    return folder
