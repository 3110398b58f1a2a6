"""`arena audit RUN_DIR`: report every rewrite and denial of a run, by rule, harness, environment
and task, with the affected rollouts' rewards and example records (Markdown, and JSON), over the
rollouts it read (so "0 in 3 rollouts" and "no rollouts" read differently).

Records come from `trace.info["arena_rewrites"]` in `traces.jsonl` and from `rewrites.jsonl`
beside it (written as they happen), both through `arena.traces`; the two are merged by record id.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arena.errors import PrerequisiteError
from arena_kit.records import AuditRecord
from arena.traces import TRACES_FILE, read_live_rewrites, read_traces

__all__ = ["AuditReport", "build_report", "load_records", "render_report", "summary_line", "write_report"]

EXAMPLES = 5


@dataclass(frozen=True)
class AuditReport:
    run_dir: str
    total: int
    by_rule: dict[str, int]
    by_harness: dict[str, int]
    by_environment: dict[str, int]
    by_task: dict[str, int]
    rollouts: list[dict[str, Any]]
    """One entry per affected rollout: id, task, harness, rewrites, reward."""
    examples: list[dict[str, Any]]
    skipped: list[str] = field(default_factory=list)
    """Lines the reader skipped (a run cut short mid-write)."""
    read: int = 0
    """Rollouts (episodes) the report read: what the counts are out of."""


def load_records(run_dir: Path) -> tuple[list[AuditRecord], dict[str, float | None], list[str]]:
    """All audit records of a run, every rollout's reward (by trace id), and what the reader skipped.

    Raises:
        PrerequisiteError: `run_dir` holds no `traces.jsonl`.
        TraceError: a trace or record line is corrupt before the last line of its file.
    """
    log = read_traces(run_dir)
    if not log.exists:
        raise PrerequisiteError(f"{run_dir} has no {TRACES_FILE}: give the directory of one vf-eval run")
    records = {record.id: record for episode in log.episodes for record in episode.rewrites}
    rewards = {episode.id or f"(line {n})": episode.reward for n, episode in enumerate(log.episodes, 1)}
    live, live_skipped = read_live_rewrites(run_dir)
    for record in live:
        records.setdefault(record.id, record)
    skipped = [reason for reason in (log.skipped, live_skipped) if reason]
    return sorted(records.values(), key=lambda r: r.time), rewards, skipped


def build_report(run_dir: Path) -> AuditReport:
    records, rewards, skipped = load_records(run_dir)
    rollouts: dict[str, dict[str, Any]] = {}
    for r in records:
        entry = rollouts.setdefault(
            r.rollout,
            {
                "rollout": r.rollout,
                "task": r.task,
                "harness": r.harness,
                "rewrites": 0,
                "rules": [],
                "reward": rewards.get(r.rollout),
            },
        )
        entry["rewrites"] += 1
        if r.rule not in entry["rules"]:
            entry["rules"].append(r.rule)

    def count(attr: str) -> dict[str, int]:
        return dict(Counter(str(getattr(r, attr)) for r in records).most_common())

    examples: list[dict[str, Any]] = []
    for rule in count("rule"):
        examples += [r.model_dump() for r in records if r.rule == rule][:EXAMPLES]
    return AuditReport(
        run_dir=str(run_dir),
        total=len(records),
        by_rule=count("rule"),
        by_harness=count("harness"),
        by_environment=count("environment"),
        by_task=count("task"),
        rollouts=list(rollouts.values()),
        examples=examples,
        skipped=skipped,
        read=len(rewards),
    )


def summary_line(report: AuditReport) -> str:
    """`2 rewrite(s)/denial(s) in 1 of 3 rollout(s) read: net-egress 2`."""
    if not report.read:
        return f"no episodes in {report.run_dir}: its traces.jsonl holds none yet, so there is nothing to audit"
    rules = ", ".join(f"{k} {v}" for k, v in report.by_rule.items())
    return f"{report.total} rewrite(s)/denial(s) in {len(report.rollouts)} of {report.read} rollout(s) read" + (
        f": {rules}" if rules else ""
    )


def write_report(report: AuditReport, out_dir: Path) -> tuple[Path, Path]:
    """Write `audit.json` and `audit.md` into `out_dir` (created if missing); returns both paths.

    Raises:
        OSError: `out_dir` cannot be created or written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "audit.json", out_dir / "audit.md"
    json_path.write_text(json.dumps(asdict(report), indent=2))
    md_path.write_text(render_report(report))
    return json_path, md_path


def render_report(report: AuditReport) -> str:
    """The report as Markdown."""
    lines = [f"# Rewrite audit: {report.run_dir}", "", f"{summary_line(report)}.", ""]
    lines += [f"Warning: {reason}" for reason in report.skipped] + ([""] if report.skipped else [])
    for title, table in (
        ("rule", report.by_rule),
        ("harness", report.by_harness),
        ("environment", report.by_environment),
        ("task", report.by_task),
    ):
        lines += [
            f"## By {title}",
            "",
            f"| {title} | count |",
            "| --- | ---: |",
            *(f"| {k} | {v} |" for k, v in table.items()),
            "",
        ]
    lines += [
        "## Affected rollouts",
        "",
        "| rollout | task | harness | rewrites | rules | reward |",
        "| --- | --- | --- | ---: | --- | ---: |",
    ]
    for r in report.rollouts:
        reward = "—" if r["reward"] is None else f"{r['reward']:.3f}"
        lines.append(
            f"| {r['rollout'][:12]} | {r['task']} | {r['harness']} | {r['rewrites']} | {', '.join(r['rules'])} | {reward} |"
        )
    lines += ["", "## Examples", ""]
    for e in report.examples:
        lines += [
            f"- **{e['rule']}** ({e['stage']}, {e['harness']}, task {e['task']}) `{e['tool']}` {json.dumps(e['arguments'])[:200]}",
            f"  - original sha256 `{e['original_sha256'][:16]}…`, excerpt: {json.dumps(e['original_excerpt'][:120])}",
        ]
    return "\n".join(lines) + "\n"
