"""`arena audit RUN_DIR`: report every rewrite and denial of a run, by rule, harness, environment
and task, with the affected rollouts' rewards and example records (Markdown + JSON).

Records come from `trace.info["arena_rewrites"]` in `traces.jsonl` and from `rewrites.jsonl`
beside it (written as they happen); the two are merged by record id.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from arena.errors import PrerequisiteError
from arena.rewrite_hook import AuditRecord

__all__ = ["AuditReport", "build_report", "load_records", "write_report"]

EXAMPLES = 5


@dataclass(frozen=True)
class AuditReport:
    run_dir: str
    total: int
    by_rule: dict[str, int]
    by_harness: dict[str, int]
    by_environment: dict[str, int]
    by_task: dict[str, int]
    rollouts: list[dict]
    """One entry per affected rollout: id, task, harness, rewrites, reward."""
    examples: list[dict]


def load_records(run_dir: Path) -> tuple[list[AuditRecord], dict[str, float | None]]:
    """All audit records of a run, and every rollout's reward (by trace id)."""
    traces = run_dir / "traces.jsonl"
    if not traces.exists():
        raise PrerequisiteError(f"{run_dir} has no traces.jsonl: give the directory of one vf-eval run")
    records: dict[str, AuditRecord] = {}
    rewards: dict[str, float | None] = {}
    for line in traces.read_text().splitlines():
        if not line.strip():
            continue
        for trace in json.loads(line).get("traces") or []:
            signals = trace.get("rewards") or {}
            scores = [s.get("score") for s in signals.values()]
            rewards[trace["id"]] = None if any(x is None for x in scores) else sum(
                s["score"] * s.get("weight", 1.0) for s in signals.values()
            )
            for raw in (trace.get("info") or {}).get("arena_rewrites", []):
                record = AuditRecord.model_validate(raw)
                records[record.id] = record
    live = run_dir / "rewrites.jsonl"
    if live.exists():
        for line in live.read_text().splitlines():
            if line.strip():
                record = AuditRecord.model_validate_json(line)
                records.setdefault(record.id, record)
    return sorted(records.values(), key=lambda r: r.time), rewards


def build_report(run_dir: Path) -> AuditReport:
    records, rewards = load_records(run_dir)
    rollouts: dict[str, dict] = {}
    for r in records:
        entry = rollouts.setdefault(r.rollout, {"rollout": r.rollout, "task": r.task, "harness": r.harness, "rewrites": 0, "rules": [], "reward": rewards.get(r.rollout)})
        entry["rewrites"] += 1
        if r.rule not in entry["rules"]:
            entry["rules"].append(r.rule)
    count = lambda attr: dict(Counter(getattr(r, attr) for r in records).most_common())  # noqa: E731
    examples = []
    for rule in count("rule"):
        examples += [r.model_dump() for r in records if r.rule == rule][:EXAMPLES]
    return AuditReport(
        run_dir=str(run_dir), total=len(records), by_rule=count("rule"), by_harness=count("harness"),
        by_environment=count("environment"), by_task=count("task"), rollouts=list(rollouts.values()), examples=examples,
    )


def write_report(report: AuditReport, out_dir: Path) -> tuple[Path, Path]:
    """Write `audit.json` and `audit.md` into `out_dir` (created if missing); returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "audit.json", out_dir / "audit.md"
    json_path.write_text(json.dumps(report.__dict__, indent=2))
    lines = [f"# Rewrite audit: {report.run_dir}", "", f"{report.total} rewrite(s) or denial(s).", ""]
    for title, table in (("rule", report.by_rule), ("harness", report.by_harness), ("environment", report.by_environment), ("task", report.by_task)):
        lines += [f"## By {title}", "", f"| {title} | count |", "| --- | ---: |", *(f"| {k} | {v} |" for k, v in table.items()), ""]
    lines += ["## Affected rollouts", "", "| rollout | task | harness | rewrites | rules | reward |", "| --- | --- | --- | ---: | --- | ---: |"]
    for r in report.rollouts:
        reward = "—" if r["reward"] is None else f"{r['reward']:.3f}"
        lines.append(f"| {r['rollout'][:12]} | {r['task']} | {r['harness']} | {r['rewrites']} | {', '.join(r['rules'])} | {reward} |")
    lines += ["", "## Examples", ""]
    for e in report.examples:
        lines += [f"- **{e['rule']}** ({e['stage']}, {e['harness']}, task {e['task']}) `{e['tool']}` {json.dumps(e['arguments'])[:200]}",
                  f"  - original sha256 `{e['original_sha256'][:16]}…`, excerpt: {json.dumps(e['original_excerpt'][:120])}"]
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path
