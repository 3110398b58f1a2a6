"""`arena audit` counts what the records say, merges live and traced records, and leaks nothing."""

import json
import subprocess
import sys

from arena.audit import build_report
from arena_kit.rewrite.hook import AuditRecord, mask


def _record(i: int, rule: str, harness: str, rollout: str, task: str) -> dict:
    return AuditRecord(
        id=f"r{i}",
        run="run1",
        rollout=rollout,
        harness=harness,
        environment="env-a",
        task=task,
        rule=rule,
        stage="pre",
        tool="bash",
        arguments={"command": "curl http://x.io"},
        original_sha256="0" * 64,
        original_excerpt="",
        replacement="DENIED",
        time=float(i),
    ).model_dump()


def _write_run(run_dir, traces):
    run_dir.mkdir()
    lines = [json.dumps({"ok": True, "traces": [t]}) for t in traces]
    (run_dir / "traces.jsonl").write_text("\n".join(lines) + "\n")


def test_report_counts_by_rule_harness_and_task_and_carries_rewards(tmp_path):
    run = tmp_path / "run"
    traced = [
        {
            "id": "t1",
            "rewards": {"r": {"score": 0.0, "weight": 1.0}},
            "info": {
                "arena_rewrites": [
                    _record(1, "net-egress", "bash", "t1", "a"),
                    _record(2, "host-probe", "bash", "t1", "a"),
                ]
            },
        },
        {
            "id": "t2",
            "rewards": {"r": {"score": 0.5, "weight": 1.0}},
            "info": {"arena_rewrites": [_record(3, "net-egress", "codex", "t2", "b")]},
        },
        {"id": "t3", "rewards": {"r": {"score": 1.0, "weight": 1.0}}, "info": {}},
    ]
    _write_run(run, traced)
    # A live record already traced (same id) is not counted twice; one only live is added.
    live = [_record(3, "net-egress", "codex", "t2", "b"), _record(4, "sandbox-tamper", "codex", "t2", "b")]
    (run / "rewrites.jsonl").write_text("\n".join(json.dumps(r) for r in live) + "\n")

    report = build_report(run)
    assert report.total == 4
    assert report.by_rule == {"net-egress": 2, "host-probe": 1, "sandbox-tamper": 1}
    assert report.by_harness == {"bash": 2, "codex": 2}
    assert report.by_task == {"a": 2, "b": 2}
    rewards = {r["rollout"]: (r["rewrites"], r["reward"]) for r in report.rollouts}
    assert rewards == {"t1": (2, 0.0), "t2": (2, 0.5)}


def test_audit_prints_the_report_counts_the_rollouts_it_read_and_writes_nothing_without_out(tmp_path):
    run = tmp_path / "run"
    _write_run(
        run,
        [
            {"id": "t1", "rewards": {}, "info": {"arena_rewrites": [_record(1, "net-egress", "bash", "t1", "a")]}},
            {"id": "t2", "rewards": {}, "info": {}},
            {"id": "t3", "rewards": {}, "info": {}},
        ],
    )
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "audit", str(run)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "1 rewrite(s)/denial(s) in 1 of 3 rollout(s) read: net-egress 1"
    assert "| net-egress | 1 |" in proc.stdout
    assert sorted(p.name for p in run.iterdir()) == ["traces.jsonl"]


def test_audit_of_a_run_without_rewrites_says_how_many_rollouts_it_read(tmp_path):
    run = tmp_path / "run"
    _write_run(run, [{"id": f"t{i}", "rewards": {}, "info": {}} for i in range(3)])
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "audit", str(run)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == "0 rewrite(s)/denial(s) in 0 of 3 rollout(s) read"


def test_audit_out_creates_a_missing_directory(tmp_path):
    run, out = tmp_path / "run", tmp_path / "reports" / "probe"
    _write_run(
        run, [{"id": "t1", "rewards": {}, "info": {"arena_rewrites": [_record(1, "host-probe", "bash", "t1", "a")]}}]
    )
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "audit", str(run), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "audit.json").read_text())["by_rule"] == {"host-probe": 1}
    assert not (run / "audit.json").exists()


def test_audit_of_a_directory_without_traces_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "arena.cli", "audit", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "no traces.jsonl" in proc.stderr


def test_mask_hides_every_held_out_string_longest_first():
    assert (
        mask("root=payments-db kind=disk_full", ["payments-db", "disk_full", "payments"])
        == "root=[held-out] kind=[held-out]"
    )
