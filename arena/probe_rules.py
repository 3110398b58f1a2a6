"""The degenerate-policy gate's rules, decided by one-sided 95 % bounds, and the probe's tables.

Each rule is met, failed or undecided. A statistical rule is met when its bound is on the rule's
side of the threshold, failed when the opposite bound is past it (the data show the rule broken),
and otherwise undecided: the tasks run cannot tell, and the rule says about how many would
(`arena_kit.gate.stats.decide`). The rules, per environment:

| rule | met when |
| --- | --- |
| episodes-ran | every episode of every policy ran and scored (deterministic) |
| staller-scores-zero | every scored staller episode is 0 (deterministic) |
| oracle-reaches-ceiling | the oracle's lower bound is ≥ 0.90 (a perfect oracle decides it at 29 tasks) |
| budget-binds | exhaustive − oracle, paired by task: upper bound ≤ −0.15 |
| impatient-below-oracle, spammer-below-oracle | that policy − oracle, paired: upper bound ≤ −0.3 |
| shortcuts-fail | each `shortcut_*`: its upper bound ≤ its ceiling (0.35 unless declared), and shortcut − oracle, paired: upper bound ≤ −0.5 |
| cheaters-gain-nothing | each cheater's upper bound ≤ 0.10 ("no better than the staller": decidable at 29 tasks when every episode is 0) |
| honest-policies-untouched | no rewrite rule fired on an honest policy (staller, the standard four, shortcuts, investigations; deterministic) |

An `investigate_*` policy is reported and held to the last rule only. The gate passes when every
rule is met; fails when any is failed; is undecided when none failed and some cannot be decided
yet (`arena probe` exits 0, 1, 3).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from arena.evalrun import EvalOutcome
from arena.scored import MEAN_LEGEND, score_episodes
from arena_kit.gate.stats import Estimate, Status, Verdict, decide, estimate, paired_test
from arena_kit.scripted import INVESTIGATION_PREFIX, SHORTCUT_CEILING, SHORTCUT_PREFIX

__all__ = [
    "GateVerdict",
    "PolicyScore",
    "Role",
    "RuleResult",
    "exit_code",
    "gate",
    "gate_verdict",
    "render_difficulty",
    "render_rules",
    "render_table",
    "role_of",
    "score_outcome",
]

STANDARD = ("oracle", "spammer", "impatient", "exhaustive")
ORACLE_FLOOR = 0.90
"""The oracle's lower bound must reach this."""
BUDGET_MARGIN = 0.15
"""exhaustive − oracle must be at most −this."""
DEGENERATE_MARGIN = 0.3
"""impatient − oracle and spammer − oracle must be at most −this."""
SHORTCUT_MARGIN = 0.5
"""shortcut − oracle must be at most −this."""
CHEATER_CEILING = 0.10
"""A cheater's upper bound must be at most this."""
Role = Literal["staller", "standard", "shortcut", "investigation", "cheater"]
GateVerdict = Literal["passed", "failed", "undecided"]
DETERMINISTIC = ("episodes-ran", "honest-policies-untouched")
"""Rules checked on every policy and decided without statistics: a table lists the ones not met."""


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
    """Episodes not scored (`arena.scored`): not in the mean."""
    mean: float | None
    """The one mean (`arena.scored`); None with no scored episode."""
    min: float | None
    max: float | None
    """The lowest and highest scored reward."""
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
    """Failed episodes that ended on an infrastructure fault their retries did not outlast."""
    agent_faults: int = 0
    """Episodes the agent ended by breaking its own box: scored 0, the agent's, not failed."""
    failed_stops: dict[str, int] = field(default_factory=dict)
    """Stop condition → failed episodes that ended on it (`not ok` when verifiers named none): why they failed."""
    tasks: int = 0
    low: float | None = None
    high: float | None = None
    """The mean's two-sided 95 % interval."""
    lower: float | None = None
    upper: float | None = None
    """The mean's one-sided 95 % bounds (what the rules read)."""
    method: str = ""
    pass_k: dict[str, float] | None = None
    """{"k", "pass_at_k", "pass_hat_k"} when every task had several rollouts."""
    rewards: dict[str, list[float]] = field(default_factory=dict)
    """task → scored rewards: what the paired rules pair by task."""

    @property
    def role(self) -> Role:
        return role_of(self.policy)

    @property
    def complete(self) -> bool:
        """Every episode ran and none failed: a resumed probe keeps this score."""
        return self.episodes > 0 and self.failed == 0

    def estimate(self) -> Estimate:
        return estimate(self.rewards)


@dataclass(frozen=True)
class RuleResult:
    env: str
    rule: str
    status: Status
    detail: str
    subject: str = ""
    """The policy (or pair) the rule read."""
    tasks_needed: int | None = None
    """For an undecided rule: about how many tasks would decide it (a planning figure)."""


def score_outcome(env: str, policy: str, outcome: EvalOutcome, ceiling: float | None = None) -> PolicyScore:
    scores = score_episodes(outcome.episodes)
    est = scores.estimate
    scored = [r for rewards in scores.rewards.values() for r in rewards]
    used = [v for e in outcome.episodes for k, v in e.metrics.items() if k.endswith("_used") and v is not None]
    pass_k = scores.pass_k

    def number(x: float) -> float | None:
        return None if math.isnan(x) else x

    return PolicyScore(
        env=env,
        policy=policy,
        episodes=scores.episodes,
        failed=scores.failed,
        mean=number(est.mean),
        min=min(scored, default=None),
        max=max(scored, default=None),
        turns=sum(e.turns for e in outcome.episodes) / len(outcome.episodes) if outcome.episodes else 0.0,
        budget_used=sum(used) / len(used) if used else None,
        rewrites=sum(len(e.rewrites) for e in outcome.episodes),
        ceiling=ceiling,
        retries=outcome.retries,
        infra_failed=scores.infra,
        agent_faults=scores.agent_faults,
        tasks=est.tasks,
        failed_stops=dict(Counter(e.stop_condition or "not ok" for e in outcome.episodes if e.failed)),
        low=number(est.low),
        high=number(est.high),
        lower=number(est.lower),
        upper=number(est.upper),
        method=est.method,
        pass_k=None if pass_k is None else {"k": pass_k.k, "pass_at_k": pass_k.at_k, "pass_hat_k": pass_k.hat_k},
        rewards=scores.rewards,
    )


def gate(scores: Sequence[PolicyScore]) -> list[RuleResult]:
    """Pure: every rule's verdict on one table of scores (see the module)."""
    results: list[RuleResult] = []
    for env in sorted({s.env for s in scores}):
        results += _env_rules(env, {s.policy: s for s in scores if s.env == env})
    return results


def _env_rules(env: str, by: Mapping[str, PolicyScore]) -> list[RuleResult]:
    results: list[RuleResult] = []

    def fixed(ok: bool, rule: str, subject: str, detail: str) -> None:
        results.append(RuleResult(env, rule, "met" if ok else "failed", detail, subject))

    def bound(verdict: Verdict, rule: str, subject: str, head: str) -> None:
        results.append(RuleResult(env, rule, verdict.status, f"{head}; {verdict.text}", subject, verdict.tasks_needed))

    for s in by.values():
        fixed(
            s.failed == 0 and s.episodes > 0,
            "episodes-ran",
            s.policy,
            f"{s.policy}: {s.failed} of {s.episodes} episodes failed ({s.infra_failed} on an infrastructure fault)"
            + "".join(f"; stopped by {stop} ×{n}" for stop, n in sorted(s.failed_stops.items())),
        )
        if s.role != "cheater":
            fixed(
                s.rewrites == 0,
                "honest-policies-untouched",
                s.policy,
                f"{s.policy}: {s.rewrites} rewrite(s)/denial(s) of an honest policy (a rule false positive; see arena audit)",
            )
    staller, oracle = by.get("staller"), by.get("oracle")
    if staller is None or oracle is None:
        fixed(False, "policies-present", "", "the gate needs both a staller and an oracle")
        return results
    if staller.tasks == 0:
        results.append(RuleResult(env, "staller-scores-zero", "undecided", "staller: no scored episode", "staller"))
    else:
        fixed(
            staller.max == 0.0,
            "staller-scores-zero",
            "staller",
            f"staller: highest scored episode {staller.max:.3f} (must be 0)",
        )
    oracle_est = oracle.estimate()
    bound(
        decide(oracle_est, ORACLE_FLOOR, "at_least"), "oracle-reaches-ceiling", "oracle", f"oracle mean {_mean(oracle)}"
    )
    below = [
        ("exhaustive", "budget-binds", BUDGET_MARGIN),
        ("impatient", "impatient-below-oracle", DEGENERATE_MARGIN),
        ("spammer", "spammer-below-oracle", DEGENERATE_MARGIN),
    ]
    for name, rule, margin in below:
        if name in by:
            _paired_rule(results, env, rule, by[name], oracle, margin)
    for name, s in by.items():
        if s.role == "shortcut":
            ceiling = SHORTCUT_CEILING if s.ceiling is None else s.ceiling
            bound(
                decide(s.estimate(), ceiling, "at_most"),
                "shortcuts-fail",
                name,
                f"shortcut {name} mean {_mean(s)} (its ceiling {ceiling:.2f})",
            )
            _paired_rule(results, env, "shortcuts-fail", s, oracle, SHORTCUT_MARGIN)
        elif s.role == "cheater":
            bound(
                decide(s.estimate(), CHEATER_CEILING, "at_most"),
                "cheaters-gain-nothing",
                name,
                f"cheater {name} mean {_mean(s)} (no better than the staller: ≤ {CHEATER_CEILING:.2f})",
            )
    return results


def _paired_rule(
    results: list[RuleResult], env: str, rule: str, s: PolicyScore, oracle: PolicyScore, margin: float
) -> None:
    paired = paired_test(oracle.rewards, s.rewards)
    verdict = decide(paired, -margin, "at_most")
    head = (
        f"{s.policy} − oracle = {paired.difference:+.3f} on {paired.tasks} shared tasks"
        if paired.tasks
        else f"{s.policy} and the oracle share no scored task"
    )
    results.append(
        RuleResult(env, rule, verdict.status, f"{head}; {verdict.text}", f"{s.policy} − oracle", verdict.tasks_needed)
    )


def _mean(s: PolicyScore) -> str:
    return "—" if s.mean is None else f"{s.mean:.3f}"


def gate_verdict(results: Sequence[RuleResult]) -> GateVerdict:
    if any(r.status == "failed" for r in results):
        return "failed"
    return "undecided" if any(r.status == "undecided" for r in results) else "passed"


def exit_code(results: Sequence[RuleResult]) -> int:
    """0: every rule met; 1: a rule failed; 3: none failed, some undecided (run more tasks)."""
    return {"passed": 0, "failed": 1, "undecided": 3}[gate_verdict(results)]


def render_table(scores: Sequence[PolicyScore]) -> str:
    """The probe's table: each policy's one mean with its 95 % interval and one-sided bounds (what
    the rules read), the episodes beside it, and pass@k/pass^k with several rollouts a task."""
    header = (
        f"{'environment':<20} {'policy':<30} {'role':<9} {'tasks':>5} {'failed':>8} {'agent':>5} {'rewr':>5} {'turns':>6} "
        f"{'used':>6} {'min':>6} {'max':>6} {'lower':>6} {'upper':>6}  one mean [95% interval]"
    )
    lines = [header]
    for s in scores:
        est = s.estimate()
        used = "—" if s.budget_used is None else f"{s.budget_used:.1f}"
        failed = f"{s.failed} ({s.failed / s.episodes:.0%})" if s.failed and s.episodes else str(s.failed)
        notes = (
            [
                f"pass@{int(s.pass_k['k'])} {s.pass_k['pass_at_k']:.3f} pass^{int(s.pass_k['k'])} {s.pass_k['pass_hat_k']:.3f}"
            ]
            if s.pass_k
            else []
        )
        notes += [est.note] if est.note else []
        lines.append(
            f"{s.env:<20} {s.policy:<30} {s.role:<9} {s.tasks:>5} {failed:>8} {s.agent_faults:>5} {s.rewrites:>5} {s.turns:>6.1f} "
            f"{used:>6} {_cell(s.min)} {_cell(s.max)} {_cell(s.lower)} {_cell(s.upper)}  {est.text():<21}"
            + (f"  {'; '.join(notes)}" if notes else "")
        )
    lines.append(MEAN_LEGEND + "; lower/upper: one-sided 95 % bounds")
    return "\n".join(lines)


def _cell(x: float | None) -> str:
    return f"{'—':>6}" if x is None else f"{x:>6.3f}"


def render_rules(results: Sequence[RuleResult]) -> str:
    """Every rule's verdict (decided by one-sided 95 % bounds); rules checked on every policy and
    met are one line per environment."""
    lines = ["rules (decided by one-sided 95 % bounds; docs/commands.md#arena-probe):"]
    for env in sorted({r.env for r in results}):
        mine = [r for r in results if r.env == env]
        for rule in DETERMINISTIC:
            of_rule = [r for r in mine if r.rule == rule]
            if of_rule and all(r.status == "met" for r in of_rule):
                lines.append(f"  [{env}] {rule}: met for all {len(of_rule)} policies")
        for r in mine:
            if r.rule in DETERMINISTIC and r.status == "met":
                continue
            subject = f" ({r.subject})" if r.subject and r.rule not in DETERMINISTIC else ""
            lines.append(f"  [{env}] {r.rule}{subject}: {r.status} — {r.detail}")
    return "\n".join(lines)


def render_difficulty(knob: str, tables: Mapping[str, Sequence[PolicyScore]]) -> str:
    """One row per (environment, policy), one column of one means per value of `knob`."""
    values = list(tables)
    rows: dict[tuple[str, str], dict[str, float | None]] = {}
    for value, scores in tables.items():
        for s in scores:
            rows.setdefault((s.env, s.policy), {})[value] = s.mean
    width = max(8, *(len(f"{knob}={v}") for v in values))
    lines = [f"{'environment':<20} {'policy':<30} " + " ".join(f"{f'{knob}={v}':>{width}}" for v in values)]
    for (env, policy), means in rows.items():
        cells = (f"{'—':>{width}}" if (mean := means.get(v)) is None else f"{mean:>{width}.3f}" for v in values)
        lines.append(f"{env:<20} {policy:<30} " + " ".join(cells))
    return "\n".join(lines)
