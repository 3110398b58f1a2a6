"""The degenerate-policy gate: run every scripted policy of each environment through a real harness
in docker, and check that only the oracle scores like an investigator.

Rules (each names itself when it fails): staller mean = 0; oracle mean ≥ 0.98; exhaustive ≤
oracle − 0.15; impatient and spammer ≤ oracle − 0.3; every cheater ≤ staller + 0.05; no rule
rewrites or denies anything of an honest policy (staller, oracle, spammer, impatient, exhaustive:
a firing there is a false positive that would distort a real agent's episode). A cheater is any
policy an environment publishes beyond oracle, spammer, impatient and exhaustive.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.evalrun import EvalOutcome, EvalRequest, run_evals
from arena.images import image_ref
from arena.policies import PolicyResolver, model_name
from arena.server import start_in_thread

__all__ = ["GateFailure", "PolicyScore", "gate", "run_probe", "score_outcome"]

STANDARD = ("oracle", "spammer", "impatient", "exhaustive")


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


@dataclass(frozen=True)
class GateFailure:
    env: str
    rule: str
    detail: str


def score_outcome(env: str, policy: str, outcome: EvalOutcome) -> PolicyScore:
    rewards = [e.reward or 0.0 for e in outcome.episodes] or [0.0]
    used = [v for e in outcome.episodes for k, v in e.metrics.items() if k.endswith("_used") and v is not None]
    return PolicyScore(
        env=env, policy=policy, episodes=len(outcome.episodes), failed=len(outcome.failures),
        mean=statistics.fmean(rewards), min=min(rewards), max=max(rewards),
        turns=statistics.fmean([e.turns for e in outcome.episodes]) if outcome.episodes else 0.0,
        budget_used=statistics.fmean(used) if used else None,
        rewrites=sum(len(e.info.get("arena_rewrites") or []) for e in outcome.episodes),
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
            check(s.failed == 0 and s.episodes > 0, "episodes-ran", f"{s.policy}: {s.failed} of {s.episodes} episodes failed")
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
            if name in (*STANDARD, "staller"):
                check(s.rewrites == 0, "honest-policies-untouched", f"{name}: {s.rewrites} rewrite(s)/denial(s) of an honest policy (a rule false positive; see arena audit)")
            else:
                check(s.mean <= staller.mean + 0.05, "cheaters-gain-nothing", f"cheater {name} {s.mean:.3f} > staller + 0.05 = {staller.mean + 0.05:.3f}")
    return failures


def run_probe(
    envs: Sequence[str],
    *,
    harness: str = "bash",
    tasks: int = 20,
    seed: int | None = None,
    output_dir: Path = Path("outputs"),
    max_concurrent: int = 4,
    parallel_evals: int = 2,
    progress: Callable[[str], None] = print,
) -> tuple[list[PolicyScore], list[GateFailure], Path]:
    """Run every policy of every env (`parallel_evals` vf-evals at once); returns the scores, the
    gate failures and the path of the JSON report."""
    resolver = PolicyResolver()
    run_dir = output_dir / f"probe-{time.strftime('%Y%m%d-%H%M%S')}"
    plan = [(env, policy) for env in envs for policy in ["staller", *resolver.environment_policies(env)]]
    started = time.monotonic()
    progress(f"probe: {len(plan)} policies × {tasks} tasks ({harness}, {parallel_evals} vf-evals at once) → {run_dir}")
    with start_in_thread(resolver=resolver) as server:
        requests = [
            EvalRequest(
                taskset=env, harness=harness, model=model_name(env, policy), image=image_ref(env),  # type: ignore[arg-type]
                base_url=server.url, output_dir=run_dir, run_name=f"{env}-{policy}-{harness}",
                num_tasks=tasks, max_concurrent=max_concurrent, taskset_args={"split": "dev"},
                select={"shuffle": True, "seed": seed} if seed is not None else {},
            )
            for env, policy in plan
        ]
        policy_of = {request.run_name: item for request, item in zip(requests, plan)}
        scored: dict[str, PolicyScore] = {}

        def announce(request: EvalRequest, outcome: EvalOutcome) -> None:
            score = scored[request.run_name] = score_outcome(*policy_of[request.run_name], outcome)
            progress(
                f"[{len(scored)}/{len(plan)}] {score.env:<20} {score.policy:<26} mean {score.mean:.3f}  "
                f"({score.episodes} ep, {score.failed} failed, {score.rewrites} rewritten; {time.monotonic() - started:.0f}s)"
            )

        run_evals(requests, parallel=parallel_evals, on_done=announce)
    scores = [scored[request.run_name] for request in requests]
    failures = gate(scores)
    report = run_dir / "probe.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"harness": harness, "tasks": tasks, "seed": seed, "scores": [asdict(s) for s in scores], "failures": [asdict(f) for f in failures]}, indent=2))
    return scores, failures, report


def render_table(scores: Sequence[PolicyScore]) -> str:
    lines = [f"{'environment':<20} {'policy':<26} {'mean':>6} {'min':>6} {'max':>6} {'turns':>6} {'used':>6} {'rewr':>5} {'failed':>6}"]
    for s in scores:
        used = "—" if s.budget_used is None else f"{s.budget_used:.1f}"
        lines.append(f"{s.env:<20} {s.policy:<26} {s.mean:>6.3f} {s.min:>6.3f} {s.max:>6.3f} {s.turns:>6.1f} {used:>6} {s.rewrites:>5} {s.failed:>6}")
    return "\n".join(lines)
