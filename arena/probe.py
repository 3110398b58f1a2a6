"""`arena probe`, the degenerate-policy gate: run every scripted policy of each environment through
a real harness in docker, and decide the gate's rules (`arena.probe_rules`, where they are listed)
on the scores by one-sided 95 % bounds: each rule is met, failed, or undecided ("run more tasks").

Rules: episodes-ran (every episode scored); the staller's every scored episode 0; the oracle's lower
bound ≥ 0.90 (a perfect oracle decides it at 29 tasks; N=50 is the documented gate); exhaustive −
oracle, paired by task, upper bound ≤ −0.15; impatient and spammer − oracle upper ≤ −0.3; each
shortcut's upper bound ≤ its ceiling (0.35 unless declared) and shortcut − oracle upper ≤ −0.5;
each cheater's upper bound ≤ 0.10 (no better than the staller: decidable at 29 tasks when every
episode is 0); no rule rewrites or denies anything of an honest policy. An investigation
(`investigate_*`) is held to that last rule only; a cheater is any other policy an environment
publishes. Exit codes: 0 every rule met, 1 a rule failed, 3 nothing failed but a rule is undecided
(the probe prints about how many tasks it needs).

`probe.json` is rewritten as each policy finishes, so an interrupted probe can be resumed: its
complete policies are read back, the others continue their vf-eval runs (`vf-eval --resume`)
against a model server on the port the probe first used (vf-eval resumes only the identical config).
`probe.json` names the host's task secret by its fingerprint (`arena_kit.task_secret`): the tasks
of a seed differ between secrets, so a probe made under another secret is never resumed.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from arena.choices import SPLITS, Harness, Split
from arena.errors import PrerequisiteError, UsageError
from arena.evalrun import EvalOutcome, EvalRequest, run_evals
from arena.images import image_ref
from arena.policies import PolicyResolver, model_name
from arena.probe_rules import (
    PolicyScore,
    RuleResult,
    exit_code,
    gate,
    gate_verdict,
    render_difficulty,
    render_rules,
    render_table,
    role_of,
    score_outcome,
)
from arena.server import start_in_thread
from arena_kit import task_secret
from arena_kit.scripted import shortcut_ceiling

__all__ = [
    "PolicyScore",
    "RuleResult",
    "gate",
    "latest_probe",
    "render_difficulty",
    "render_table",
    "report_gate",
    "role_of",
    "run_probe",
    "score_outcome",
]


def run_probe(
    envs: Sequence[str],
    *,
    harness: Harness = "bash",
    tasks: int = 20,
    split: Split = "dev",
    seed: int | None = None,
    policies: Sequence[str] = (),
    taskset_args: Mapping[str, Any] | None = None,
    output_dir: Path = Path("outputs"),
    max_concurrent: int = 4,
    parallel_evals: int = 2,
    resume: Path | None = None,
    progress: Callable[[str], None] = print,
) -> tuple[list[PolicyScore], list[RuleResult], Path]:
    """Run every policy of every env (`parallel_evals` vf-evals at once) on `tasks` tasks of
    `split`; returns the scores, every rule's verdict (`arena.probe_rules.gate`) and the path of
    the JSON report, which is rewritten as each policy finishes (an interrupted probe keeps what
    it had scored).

    `policies` keeps only the policies matching one of these shell patterns (the staller and the
    oracle always run: the gate is measured against them); `taskset_args` are passed to every
    environment (difficulty knobs). `resume` names an interrupted probe's directory, to be run to
    its end with the same arguments: its complete policies are not run again.

    Raises:
        UsageError: `resume` is no probe directory, or was started with other arguments or under
            another task secret.
        PrerequisiteError: the resumed probe's model-server port is taken.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    resolver = PolicyResolver()
    run_dir = resume or output_dir / f"probe-{time.strftime('%Y%m%d-%H%M%S')}"
    report = run_dir / "probe.json"
    plan = [
        (env, policy)
        for env in envs
        for policy in ["staller", *resolver.environment_policies(env)]
        if _selected(policy, policies)
    ]
    header: dict[str, Any] = {
        "harness": harness,
        "tasks": tasks,
        "split": split,
        "seed": seed,
        "taskset_args": dict(taskset_args or {}),
        "concurrency": max_concurrent,
        "task_secret": task_secret.fingerprint(),
    }
    kept, port = _resumable(report, header, plan) if resume is not None else ({}, 0)
    started = time.monotonic()
    progress(
        f"probe: {len(plan)} policies × {tasks} {split} tasks ({harness}, {parallel_evals} vf-evals at once) → {run_dir}"
        + (f" (resumed: {len(kept)} complete)" if resume is not None else "")
    )
    try:
        server = start_in_thread(resolver=resolver, port=port)
    except OSError as exc:
        raise PrerequisiteError(
            f"cannot resume {run_dir}: its model-server port {port} is taken ({exc}); "
            "free the port, or start a fresh probe"
        ) from None
    with server:
        header["model_server"] = server.url
        requests = [
            EvalRequest(
                taskset=env,
                harness=harness,
                model=model_name(env, policy),
                image=image_ref(env),
                base_url=server.url,
                output_dir=run_dir,
                run_name=_run_name(env, policy, harness, split),
                num_tasks=tasks,
                max_concurrent=max_concurrent,
                taskset_args={**(taskset_args or {}), "split": split},
                select={"shuffle": True, "seed": seed} if seed is not None else {},
                resume=resume is not None,
            )
            for env, policy in plan
        ]
        policy_of = {request.run_name: item for request, item in zip(requests, plan)}
        scored: dict[str, PolicyScore] = dict(kept)
        _write_report(report, header, list(scored.values()), None)

        def announce(request: EvalRequest, outcome: EvalOutcome) -> None:
            env, policy = policy_of[request.run_name]
            ceiling = (
                shortcut_ceiling(resolver.environment_policy(env, policy)) if role_of(policy) == "shortcut" else None
            )
            score = scored[request.run_name] = score_outcome(env, policy, outcome, ceiling)
            _write_report(report, header, list(scored.values()), None)
            mean = "—" if score.mean is None else f"{score.mean:.3f}"
            progress(
                f"[{len(scored)}/{len(plan)}] {score.env:<20} {score.policy:<30} mean {mean} over {score.tasks} tasks  "
                f"({score.episodes} ep, {score.failed} failed ({score.infra_failed} infra), {score.agent_faults} agent faults, {score.retries} retried, {score.rewrites} rewritten; "
                f"{time.monotonic() - started:.0f}s)"
                + (f"\n  failed closed: {outcome.fail_closed}" if outcome.fail_closed else "")
            )

        _run_with_progress([r for r in requests if r.run_name not in kept], parallel_evals, announce)
    scores = [scored[request.run_name] for request in requests]
    results = gate(scores)
    _write_report(report, header, scores, results)
    return scores, results, report


def report_gate(scores: Sequence[PolicyScore], results: Sequence[RuleResult], report: Path) -> int:
    """Print the table and every rule's verdict, name each failed and undecided rule (on stderr),
    and return the exit code: 0 passed, 1 failed, 3 undecided."""
    print("\n" + render_table(scores))
    print("\n" + render_rules(results))
    print(f"\nreport: {report}")
    for r in results:
        if r.status == "failed":
            print(f"GATE FAILED [{r.env}] {r.rule}: {r.detail}", file=sys.stderr)
    undecided = [r for r in results if r.status == "undecided"]
    for r in undecided:
        need = f"about {r.tasks_needed} tasks" if r.tasks_needed else "more tasks than planning can say"
        print(f"GATE UNDECIDED [{r.env}] {r.rule} ({r.subject}): run more tasks ({need}); {r.detail}", file=sys.stderr)
    verdict = gate_verdict(results)
    if verdict == "passed":
        print("gate passed: every rule met")
    elif verdict == "undecided":
        most = max((r.tasks_needed for r in undecided if r.tasks_needed), default=None)
        print(
            f"gate undecided: no rule failed, {len(undecided)} cannot be decided with these tasks; "
            + (f"run more tasks (about {most} decide them all, if the means hold)" if most else "run more tasks")
        )
    else:
        print("gate failed")
    return exit_code(results)


def _run_with_progress(
    requests: Sequence[EvalRequest], parallel: int, on_done: Callable[[EvalRequest, EvalOutcome], None]
) -> None:
    """Run the evals with per-episode progress (`arena.progress`): counts, the mean so far, an ETA."""
    from arena.progress import EvalProgress

    with EvalProgress(requests) as live:
        run_evals(requests, parallel=parallel, on_done=live.wrap(on_done), on_start=live.started, on_tick=live.tick)


def latest_probe(output_dir: Path) -> Path:
    """The newest probe directory under `output_dir` (what `arena probe --resume` continues).

    Raises:
        UsageError: there is none.
    """
    probes = sorted(p for p in output_dir.glob("probe-*") if (p / "probe.json").is_file())
    if not probes:
        raise UsageError(f"no probe to resume under {output_dir} (no probe-*/probe.json); run `arena probe` first")
    return probes[-1]


def _run_name(env: str, policy: str, harness: str, split: str) -> str:
    """The vf-eval run (and its containers' `verifiers.run` label): probes of other splits or
    harnesses running at once never share one, so neither removes the other's boxes."""
    return f"{env}-{policy}-{harness}-{split}"


def _resumable(
    report: Path, header: Mapping[str, Any], plan: Sequence[tuple[str, str]]
) -> tuple[dict[str, PolicyScore], int]:
    """The complete scores of an interrupted probe (by run name) and its model server's port.

    Raises:
        UsageError: no report, or one written for other arguments or under another task secret.
    """
    if not report.is_file():
        raise UsageError(f"cannot resume {report.parent}: it holds no probe.json (not a probe directory)")
    try:
        saved = json.loads(report.read_text())
        names = {f.name for f in fields(PolicyScore)}
        scores = [PolicyScore(**{k: v for k, v in row.items() if k in names}) for row in saved["scores"]]
        port = int(str(saved["model_server"]).rsplit(":", 1)[1])
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise UsageError(
            f"cannot resume {report.parent}: {report} is unreadable ({type(exc).__name__}: {exc}); start a fresh probe"
        ) from None
    made_under, here = saved.get("task_secret"), header["task_secret"]
    if made_under != here:
        raise UsageError(
            f"cannot resume {report.parent}: it was made under task secret {made_under or '(none recorded)'}, "
            f"this host holds {here}; set {task_secret.ENV} to the secret it was made under, or start a fresh probe"
        )
    differing = sorted(key for key, value in header.items() if saved.get(key) != value)
    if differing:
        given = ", ".join(f"{key}={saved.get(key)!r}" for key in differing)
        raise UsageError(
            f"cannot resume {report.parent}: it was started with {given}; pass the same arguments, or start a fresh probe"
        )
    harness, split = str(header["harness"]), str(header["split"])
    wanted = {_run_name(env, policy, harness, split) for env, policy in plan}
    # Complete means every task's episode ran and none failed (a short run is resumed, not kept).
    # A score written before probe.json held each task's rewards cannot be paired: run it again.
    kept = {
        _run_name(s.env, s.policy, harness, split): s
        for s in scores
        if s.complete and s.episodes == header["tasks"] and s.rewards
    }
    return {name: score for name, score in kept.items() if name in wanted}, port


def _selected(policy: str, patterns: Sequence[str]) -> bool:
    return not patterns or policy in ("staller", "oracle") or any(fnmatch.fnmatchcase(policy, p) for p in patterns)


def _write_report(
    path: Path, header: Mapping[str, Any], scores: Sequence[PolicyScore], results: Sequence[RuleResult] | None
) -> None:
    """Write the report atomically; `results` None marks a probe still running. `failures` lists
    the failed rules, `rules` every rule's verdict, `gate` the gate's (passed, failed, undecided)."""
    done = list(results or [])
    body = {
        **header,
        "complete": results is not None,
        "gate": gate_verdict(done) if results is not None else None,
        "scores": [{**asdict(s), "role": s.role} for s in scores],
        "rules": [asdict(r) for r in done],
        "failures": [asdict(r) for r in done if r.status == "failed"],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(body, indent=2))
    partial.replace(path)
