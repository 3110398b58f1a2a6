"""Run directories in the shape vf-eval writes them (`traces.jsonl` lines of verifiers 0.4.0's
`Episode`, `configs/resolved/eval.json`), built from plain data: what the viewer, `arena compare`
and the statistics read, without docker. Shapes follow `verifiers.v1.trace.Trace` and
`arena.traces` (task.data.name, traces[0].nodes/calls/rewards/metrics/info/timing)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


def rewrite_record(
    i: int,
    rollout: str,
    task: str,
    rule: str = "net-egress",
    stage: str = "pre",
    replacement: str = "DENIED: it tries to reach the network from the box",
    time: float = 0.0,
) -> dict[str, Any]:
    return {
        "id": f"rw{i}",
        "run": "run",
        "rollout": rollout,
        "harness": "bash",
        "environment": "fault-localisation",
        "task": task,
        "rule": rule,
        "stage": stage,
        "tool": "bash",
        "arguments": {"command": "curl http://example.com"},
        "original_sha256": "0" * 64,
        "original_excerpt": "",
        "replacement": replacement,
        "time": time,
    }


DEFAULT_IMAGE = "python:3.11-slim"
"""The image a synthetic run's config names (verifiers' docker default), which no task of it runs."""


def episode_line(
    task: str,
    reward: float | None,
    *,
    trace_id: str,
    start: float = 1_700_000_000.0,
    ok: bool = True,
    stop: str | None = "agent_completed",
    tool_output: str = "12 lines matched",
    denied: bool = False,
    reason: str = "named the root cause",
    errors: Sequence[dict[str, Any]] = (),
    assistant_text: str = "I will query the log.",
    result_chars: int = 0,
    image: str = "arena/fault-localisation:latest",
) -> dict[str, Any]:
    """One `traces.jsonl` row: a bash episode with a tool call, its result, an optional denial of
    a second call (a `pre` rewrite, inline), a submission and a grade; its box ran `image` (the task's)."""
    t = start
    nodes: list[dict[str, Any]] = [
        {
            "parent": None,
            "message": {"role": "system", "content": "You are an investigator."},
            "sampled": False,
            "timestamp": t,
        },
        {
            "parent": 0,
            "message": {"role": "user", "content": f"Find the root cause of incident {task}."},
            "sampled": False,
            "timestamp": t,
        },
        {
            "parent": 1,
            "message": {
                "role": "assistant",
                "content": assistant_text,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "name": "bash",
                        "arguments": json.dumps({"command": "grep ERROR /var/log/app.log"}),
                    }
                ],
            },
            "sampled": True,
            "timestamp": t + 1,
        },
        {
            "parent": 2,
            "message": {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": tool_output + "x" * result_chars,
                "name": "bash",
            },
            "sampled": False,
            "timestamp": t + 2,
        },
    ]
    rewrites: list[dict[str, Any]] = []
    if denied:
        record = rewrite_record(len(nodes), trace_id, task, time=t + 3.5)
        rewrites.append(record)
        nodes += [
            {
                "parent": 3,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_2",
                            "type": "function",
                            "name": "bash",
                            "arguments": json.dumps({"command": "curl http://example.com"}),
                        }
                    ],
                },
                "sampled": True,
                "timestamp": t + 3,
            },
            {
                "parent": 4,
                "message": {"role": "tool", "tool_call_id": "call_2", "content": record["replacement"], "name": "bash"},
                "sampled": False,
                "timestamp": t + 4,
            },
        ]
    nodes.append(
        {
            "parent": len(nodes) - 1,
            "message": {"role": "assistant", "content": "SUBMIT db timeout"},
            "sampled": True,
            "timestamp": t + 5,
        }
    )
    score = reward if reward is not None else None
    trace = {
        "version": 1,
        "id": trace_id,
        "task": {"type": "Task", "data": {"name": task, "budget": 20}, "key": task, "hash": task},
        "agent": {
            "config": {"harness": {"id": "bash"}},
            "runtime": {"type": "docker", "id": f"box-{trace_id}", "image": image},
            "name": "agent",
            "trainable": True,
        },
        "tools": [{"type": "function", "name": "bash", "description": "run a command", "parameters": {}}],
        "nodes": nodes,
        "calls": [
            {
                "node": i,
                "model": "arena/fault-localisation/oracle",
                "finish_reason": "tool_calls",
                "time": {"start": n["timestamp"] - 0.5, "end": n["timestamp"]},
            }
            for i, n in enumerate(nodes)
            if n["sampled"]
        ],
        "rewards": {"root_cause": None if score is None else {"score": score, "weight": 1.0}},
        "metrics": {"queries_used": 1.0},
        "info": {
            "grade": {"score": score, "reason": reason, "correctness": score, "efficiency": 1.0, "queries_used": 1},
            "submission": {"service": "db", "fault_kind": "timeout"},
            "arena_rewrites": rewrites,
        },
        "is_completed": True,
        "ok": ok,
        "stop_condition": stop,
        "is_timeout": False,
        "errors": list(errors),
        "timing": {
            "start": t,
            "boot": {"start": t, "end": t + 0.4},
            "setup": {"start": t + 0.4, "end": t + 0.6},
            "agent": {"start": t + 0.6, "end": t + 5.2, "model": {"duration": 1.5}, "harness": {"duration": 3.1}},
            "finalize": {"start": t + 5.2, "end": t + 5.3},
            "scoring": {"start": t + 5.3, "end": t + 5.5},
        },
    }
    return {"id": f"ep-{trace_id}", "task": trace["task"], "ok": ok, "errors": [], "traces": [trace]}


def write_run(
    run_dir: Path,
    rows: Sequence[dict[str, Any]],
    *,
    env: str = "fault-localisation",
    harness: str = "bash",
    model: str = "arena/fault-localisation/oracle",
    split: str = "dev",
) -> Path:
    """Write a run dir: `traces.jsonl` and the resolved config vf-eval saves (an environment-agnostic one: its
    runtime names `DEFAULT_IMAGE`, which each task's own image replaces)."""
    (run_dir / "configs" / "resolved").mkdir(parents=True, exist_ok=True)
    agent = {"harness": {"id": harness}, "runtime": {"type": "docker", "image": DEFAULT_IMAGE}}
    config = {"model": model, "env": {"taskset": {"id": env, "split": split}, "agent": agent}}
    (run_dir / "configs" / "resolved" / "eval.json").write_text(json.dumps(config))
    with (run_dir / "traces.jsonl").open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return run_dir


def simple_run(run_dir: Path, rewards: dict[str, Sequence[float]], **kwargs: Any) -> Path:
    """A run with the given rewards per task (several rollouts of a task: several rewards)."""
    rows = [
        episode_line(task, r, trace_id=f"{run_dir.name}-{task}-{k}")
        for task, values in rewards.items()
        for k, r in enumerate(values)
    ]
    return write_run(run_dir, rows, **kwargs)


REAL_EPISODE = Path(__file__).resolve().parents[2] / "arena" / "data" / "fault_localisation_oracle_episode.json"
"""One `traces.jsonl` line of a real `arena demo` run (fault-localisation, bash, oracle; 7 turns)."""


def real_variant(index: int, reward: float, *, tool_output: str | None = None) -> dict[str, Any]:
    """The real episode as task `<its task>-<index>` with this reward (and, optionally, its first
    tool result replaced): the rows of a big run made from a real trace line."""
    row: dict[str, Any] = json.loads(REAL_EPISODE.read_text())
    trace = row["traces"][0]
    name = f"{row['task']['data']['name']}-{index:04d}"
    row["task"]["data"]["name"] = trace["task"]["data"]["name"] = name
    row["id"], trace["id"] = f"ep-real-{index}", f"real-{index}"
    for signal in trace["rewards"].values():
        signal["score"] = reward
    if tool_output is not None:
        next(n for n in trace["nodes"] if n["message"]["role"] == "tool")["message"]["content"] = tool_output
    return row
