"""The degenerate-policy gate: run every scripted policy of each environment through a real harness
in docker, and check that only the oracle scores like an investigator.

Rules (each names itself when it fails): staller mean = 0; oracle mean ≥ 0.98; exhaustive ≤
oracle − 0.15; impatient and spammer ≤ oracle − 0.3; every shortcut (a policy published as
`shortcut_*`: an honest strategy that skips the investigation) ≤ its ceiling (0.35 unless the
environment declares another) and ≤ oracle − 0.5; every cheater ≤ staller + 0.05; no rule
rewrites or denies anything of an honest policy (staller, the standard four, shortcuts: a firing
there is a false positive that would distort a real agent's episode). An investigation
(`investigate_*`: an honest, lighter investigation than the oracle's) is reported and held to
that last rule only. A cheater is any other policy an environment publishes.

`probe.json` is rewritten as each policy finishes, so an interrupted probe can be resumed: its
complete policies are read back, the others continue their vf-eval runs (`vf-eval --resume`)
against a model server on the port the probe first used (vf-eval resumes only the identical config).
"""

from __future__ import annotations

import fnmatch
import json
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

from arena.choices import SPLITS, Harness, Split
from arena.errors import PrerequisiteError, UsageError
from arena.evalrun import EvalOutcome, EvalRequest, run_evals
from arena.images import image_ref
from arena.policies import PolicyResolver, model_name
from arena_kit.scripted import INVESTIGATION_PREFIX, SHORTCUT_CEILING, SHORTCUT_PREFIX, shortcut_ceiling
from arena.server import start_in_thread
from arena.stats import clustered_mean

__all__ = ["GateFailure", "PolicyScore", "Role", "gate", "latest_probe", "render_difficulty", "render_table",
           "role_of", "run_probe", "score_outcome"]

STANDARD = ("oracle", "spammer", "impatient", "exhaustive")
SHORTCUT_MARGIN = 0.5
"""A shortcut must stay at least this far below the oracle."""
Role = Literal["staller", "standard", "shortcut", "investigation", "cheater"]


def role_of(policy: str) -> Role:
    """How the gate treats a policy, from its published name."""
    if policy == "staller":
        return "staller"
    if policy in STANDARD:
        return "standard"
    if policy.startswith(INVESTIGATION_PREFIX):
        return "investigation"
    return "shortcut" if policy.startswith(SHORTCUT_PREFIX) else "cheater"


@dataclass(frozen=True)
class PolicyScore:
    env: str
    policy: str
    episodes: int
    failed: int
    mean: float
    min: float
    max: float
    turns: float
    budget_used: float | None
    """Mean queries/statements spent (the environment's `*_used` metric), if it reports one."""
    rewrites: int = 0
    """Tool results rewritten or calls denied by Arena's rules, over all episodes (trace info)."""
    ceiling: float | None = None
    """For a shortcut: the highest mean the gate allows it."""
    retries: int = 0
    """Rollouts re-run after an infrastructure fault (`arena.retries`), over all episodes."""
    infra_failed: int = 0
    """Failed episodes that ended on an infrastructure fault their retries did not outlast (`arena.traces.INFRA_STOPS`)."""
    agent_faults: int = 0
    """Episodes the agent ended by breaking its own box (`arena.traces.AGENT_STOPS`): scored 0, counted as the agent's, not failed."""
    ci95: float | None = None
    """Half-width of the mean's 95 % interval, clustered by task (`arena.stats`); None: undefined
    (fewer than two tasks) or not computed (a report written before intervals)."""

    @property
    def role(self) -> Role:
        return role_of(self.policy)

    @property
    def complete(self) -> bool:
        """Every episode ran and none failed: a resumed probe keeps this score."""
        return self.episodes > 0 and self.failed == 0


@dataclass(frozen=True)
class GateFailure:
    env: str
    rule: str
    detail: str


def score_outcome(env: str, policy: str, outcome: EvalOutcome, ceiling: float | None = None) -> PolicyScore:
    rewards = [e.reward or 0.0 for e in outcome.episodes] or [0.0]
    interval = clustered_mean(rewards, [e.task for e in outcome.episodes]) if outcome.episodes else None
    used = [v for e in outcome.episodes for k, v in e.metrics.items() if k.endswith("_used") and v is not None]
    return PolicyScore(
        env=env, policy=policy, episodes=len(outcome.episodes), failed=len(outcome.failures),
        mean=statistics.fmean(rewards), min=min(rewards), max=max(rewards),
        turns=statistics.fmean([e.turns for e in outcome.episodes]) if outcome.episodes else 0.0,
        budget_used=statistics.fmean(used) if used else None,
        rewrites=sum(len(e.rewrites) for e in outcome.episodes), ceiling=ceiling, retries=outcome.retries,
        infra_failed=len(outcome.infra_failures),
        agent_faults=len(outcome.agent_faults),
        ci95=None if interval is None or math.isnan(interval.half_width) else interval.half_width,
    )


def gate(scores: Sequence[PolicyScore]) -> list[GateFailure]:
    """Pure: the gate's verdict on one table of scores (empty list = pass)."""
    failures: list[GateFailure] = []
    for env in sorted({s.env for s in scores}):
        by = {s.policy: s for s in scores if s.env == env}

        def check(ok: bool, rule: str, detail: str) -> None:
            if not ok:
                failures.append(GateFailure(env, rule, detail))

        for s in by.values():
            check(s.failed == 0 and s.episodes > 0, "episodes-ran", f"{s.policy}: {s.failed} of {s.episodes} episodes failed ({s.infra_failed} on an infrastructure fault)")
        staller, oracle = by.get("staller"), by.get("oracle")
        if staller is None or oracle is None:
            check(False, "policies-present", "the gate needs both a staller and an oracle")
            continue
        check(staller.mean == 0.0, "staller-scores-zero", f"staller mean {staller.mean:.3f} ≠ 0")
        check(oracle.mean >= 0.98, "oracle-reaches-ceiling", f"oracle mean {oracle.mean:.3f} < 0.98")
        if "exhaustive" in by:
            check(by["exhaustive"].mean <= oracle.mean - 0.15, "budget-binds", f"exhaustive {by['exhaustive'].mean:.3f} > oracle − 0.15 = {oracle.mean - 0.15:.3f}")
        for name in ("impatient", "spammer"):
            if name in by:
                check(by[name].mean <= oracle.mean - 0.3, f"{name}-below-oracle", f"{name} {by[name].mean:.3f} > oracle − 0.3 = {oracle.mean - 0.3:.3f}")
        for name, s in by.items():
            if s.role != "cheater":
                check(s.rewrites == 0, "honest-policies-untouched", f"{name}: {s.rewrites} rewrite(s)/denial(s) of an honest policy (a rule false positive; see arena audit)")
            if s.role == "shortcut":
                ceiling = min(SHORTCUT_CEILING if s.ceiling is None else s.ceiling, oracle.mean - SHORTCUT_MARGIN)
                check(s.mean <= ceiling, "shortcuts-fail", f"shortcut {name} {s.mean:.3f} > {ceiling:.3f} (its ceiling {s.ceiling}, oracle − {SHORTCUT_MARGIN} = {oracle.mean - SHORTCUT_MARGIN:.3f})")
            elif s.role == "cheater":
                check(s.mean <= staller.mean + 0.05, "cheaters-gain-nothing", f"cheater {name} {s.mean:.3f} > staller + 0.05 = {staller.mean + 0.05:.3f}")
    return failures


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
) -> tuple[list[PolicyScore], list[GateFailure], Path]:
    """Run every policy of every env (`parallel_evals` vf-evals at once) on `tasks` tasks of
    `split`; returns the scores, the gate failures and the path of the JSON report, which is
    rewritten as each policy finishes (an interrupted probe keeps what it had scored).

    `policies` keeps only the policies matching one of these shell patterns (the staller and the
    oracle always run: the gate is measured against them); `taskset_args` are passed to every
    environment (difficulty knobs). `resume` names an interrupted probe's directory, to be run to
    its end with the same arguments: its complete policies are not run again.

    Raises:
        UsageError: `resume` is no probe directory, or was started with other arguments.
        PrerequisiteError: the resumed probe's model-server port is taken.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    resolver = PolicyResolver()
    run_dir = resume or output_dir / f"probe-{time.strftime('%Y%m%d-%H%M%S')}"
    report = run_dir / "probe.json"
    plan = [(env, policy) for env in envs for policy in ["staller", *resolver.environment_policies(env)]
            if _selected(policy, policies)]
    header: dict[str, Any] = {"harness": harness, "tasks": tasks, "split": split, "seed": seed,
                              "taskset_args": dict(taskset_args or {}), "concurrency": max_concurrent}
    kept, port = _resumable(report, header, plan) if resume is not None else ({}, 0)
    started = time.monotonic()
    progress(f"probe: {len(plan)} policies × {tasks} {split} tasks ({harness}, {parallel_evals} vf-evals at once) → {run_dir}"
             + (f" (resumed: {len(kept)} complete)" if resume is not None else ""))
    try:
        server = start_in_thread(resolver=resolver, port=port)
    except OSError as exc:
        raise PrerequisiteError(f"cannot resume {run_dir}: its model-server port {port} is taken ({exc}); "
                                "free the port, or start a fresh probe") from None
    with server:
        header["model_server"] = server.url
        requests = [
            EvalRequest(
                taskset=env, harness=harness, model=model_name(env, policy), image=image_ref(env),
                base_url=server.url, output_dir=run_dir, run_name=_run_name(env, policy, harness, split),
                num_tasks=tasks, max_concurrent=max_concurrent,
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
            ceiling = shortcut_ceiling(resolver.environment_policy(env, policy)) if role_of(policy) == "shortcut" else None
            score = scored[request.run_name] = score_outcome(env, policy, outcome, ceiling)
            _write_report(report, header, list(scored.values()), None)
            progress(
                f"[{len(scored)}/{len(plan)}] {score.env:<20} {score.policy:<30} mean {score.mean:.3f}  "
                f"({score.episodes} ep, {score.failed} failed ({score.infra_failed} infra), {score.agent_faults} agent faults, {score.retries} retried, {score.rewrites} rewritten; "
                f"{time.monotonic() - started:.0f}s)" + (f"\n  failed closed: {outcome.fail_closed}" if outcome.fail_closed else "")
            )

        _run_with_progress([r for r in requests if r.run_name not in kept], parallel_evals, announce)
    scores = [scored[request.run_name] for request in requests]
    failures = gate(scores)
    _write_report(report, header, scores, failures)
    return scores, failures, report


def _run_with_progress(requests: Sequence[EvalRequest], parallel: int, on_done: Callable[[EvalRequest, EvalOutcome], None]) -> None:
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


def _resumable(report: Path, header: Mapping[str, Any], plan: Sequence[tuple[str, str]]) -> tuple[dict[str, PolicyScore], int]:
    """The complete scores of an interrupted probe (by run name) and its model server's port.

    Raises:
        UsageError: no report, or one written for other arguments.
    """
    if not report.is_file():
        raise UsageError(f"cannot resume {report.parent}: it holds no probe.json (not a probe directory)")
    try:
        saved = json.loads(report.read_text())
        names = {f.name for f in fields(PolicyScore)}
        scores = [PolicyScore(**{k: v for k, v in row.items() if k in names}) for row in saved["scores"]]
        port = int(str(saved["model_server"]).rsplit(":", 1)[1])
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise UsageError(f"cannot resume {report.parent}: {report} is unreadable ({type(exc).__name__}: {exc}); start a fresh probe") from None
    differing = sorted(key for key, value in header.items() if saved.get(key) != value)
    if differing:
        given = ", ".join(f"{key}={saved.get(key)!r}" for key in differing)
        raise UsageError(f"cannot resume {report.parent}: it was started with {given}; pass the same arguments, or start a fresh probe")
    harness, split = str(header["harness"]), str(header["split"])
    wanted = {_run_name(env, policy, harness, split) for env, policy in plan}
    # Complete means every task's episode ran and none failed (a short run is resumed, not kept).
    kept = {_run_name(s.env, s.policy, harness, split): s for s in scores if s.complete and s.episodes == header["tasks"]}
    return {name: score for name, score in kept.items() if name in wanted}, port


def _selected(policy: str, patterns: Sequence[str]) -> bool:
    return not patterns or policy in ("staller", "oracle") or any(fnmatch.fnmatchcase(policy, p) for p in patterns)


def _write_report(path: Path, header: Mapping[str, Any], scores: Sequence[PolicyScore],
                  failures: Sequence[GateFailure] | None) -> None:
    """Write the report atomically; `failures` None marks a probe still running."""
    body = {**header, "complete": failures is not None,
            "scores": [{**asdict(s), "role": s.role} for s in scores],
            "failures": [asdict(f) for f in failures or []]}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.tmp")
    partial.write_text(json.dumps(body, indent=2))
    partial.replace(path)


def render_table(scores: Sequence[PolicyScore]) -> str:
    """The probe's table; `± 95%` is the half-width of the mean's interval clustered by task
    (`arena.stats`; `?` with fewer than two tasks)."""
    lines = [f"{'environment':<20} {'policy':<30} {'role':<9} {'mean':>6} {'± 95%':>6} {'min':>6} {'max':>6} {'turns':>6} {'used':>6} {'rewr':>5} {'agent':>5} {'failed':>6}"]
    for s in scores:
        used = "—" if s.budget_used is None else f"{s.budget_used:.1f}"
        ci = "?" if s.ci95 is None else f"{s.ci95:.3f}"
        lines.append(f"{s.env:<20} {s.policy:<30} {s.role:<9} {s.mean:>6.3f} {ci:>6} {s.min:>6.3f} {s.max:>6.3f} {s.turns:>6.1f} {used:>6} {s.rewrites:>5} {s.agent_faults:>5} {s.failed:>6}")
    return "\n".join(lines)


def render_difficulty(knob: str, tables: Mapping[str, Sequence[PolicyScore]]) -> str:
    """One row per (environment, policy), one column of mean scores per value of `knob`."""
    values = list(tables)
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for value, scores in tables.items():
        for s in scores:
            rows.setdefault((s.env, s.policy), {})[value] = s.mean
    width = max(8, *(len(f"{knob}={v}") for v in values))
    lines = [f"{'environment':<20} {'policy':<30} " + " ".join(f"{f'{knob}={v}':>{width}}" for v in values)]
    for (env, policy), means in rows.items():
        cells = (f"{means[v]:>{width}.3f}" if v in means else f"{'—':>{width}}" for v in values)
        lines.append(f"{env:<20} {policy:<30} " + " ".join(cells))
    return "\n".join(lines)
