"""A run's numbers for the viewer, through the one statistics interface (`arena_kit.gate.stats`): the
mean over tasks of each task's mean (what `arena compare` and the probe print for the same run) with
its interval and one-sided bounds, pass@k where tasks have several rollouts, infrastructure failures
beside the mean, tokens and cost; and the paired test of two runs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from arena_kit.gate.stats import estimate, paired_test, run_pass_at_k

__all__ = ["by_task", "pair", "pass_at", "run_numbers"]

PASS_KS = (1, 2, 5, 10)
"""The k of pass@k shown (and the largest rollout count every task has), where every task has k."""


def by_task(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """task → the scores its episodes add to the mean (an infrastructure failure adds none)."""
    out: dict[str, list[float]] = {}
    for row in rows:
        if row["score"] is not None:
            out.setdefault(row["task"], []).append(float(row["score"]))
    return out


def run_numbers(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean, its interval and bounds, and the counts the runs page shows beside them."""
    rewards = by_task(rows)
    infra = sum(bool(r["infra"]) for r in rows)
    numbers: dict[str, Any] = {
        "episodes": len(rows),
        "tasks": len({r["task"] for r in rows}),
        "infra": infra,
        "infra_rate": _num(infra / len(rows)) if rows else None,
        "failures": sum(bool(r["failed"]) and not r["infra"] for r in rows),
        "agent_faults": sum(bool(r["agent_fault"]) for r in rows),
        "retries": sum(r["retries"] for r in rows),
        "rewrites": sum(r["rewrites"] - r["denials"] for r in rows),
        "denials": sum(r["denials"] for r in rows),
        "tokens_in": _total(r["tokens_in"] for r in rows),
        "tokens_out": _total(r["tokens_out"] for r in rows),
        "cost": _total(r["cost"] for r in rows),
        "pass": pass_at(rewards),
    }
    try:
        est = estimate(rewards)
    except ValueError as exc:  # a reward outside [0, 1] (weights summing past 1): a mean, no interval
        means = [math.fsum(v) / len(v) for v in rewards.values()]
        mean = math.fsum(means) / len(means) if means else math.nan
        return {
            **numbers,
            "mean": _num(mean),
            "low": None,
            "high": None,
            "lower": None,
            "upper": None,
            "scored_tasks": len(means),
            "ci": "—" if not means else f"{mean:.3f}",
            "method": "",
            "note": f"no interval: {exc}",
        }
    return {
        **numbers,
        "mean": _num(est.mean),
        "low": _num(est.low),
        "high": _num(est.high),
        "lower": _num(est.lower),
        "upper": _num(est.upper),
        "scored_tasks": est.tasks,
        "ci": est.text(),
        "method": est.method,
        "note": est.note,
    }


def pass_at(rewards: Mapping[str, Sequence[float]]) -> list[dict[str, Any]]:
    """pass@k and pass^k for each k in `PASS_KS` (and the largest k) that every task has rollouts
    for; none when some task has a single rollout. A rollout passes with reward 1."""
    counts = [len(v) for v in rewards.values()]
    if not counts or min(counts) < 2:
        return []
    try:
        return [
            {
                "k": k,
                "at": _num(run_pass_at_k(rewards, k) or math.nan),
                "all": _num(run_pass_at_k(rewards, k, every=True) or math.nan),
            }
            for k in sorted({k for k in PASS_KS if k <= min(counts)} | {min(counts)})
        ]
    except ValueError:
        return []


def pair(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """B − A on the tasks both runs scored: the paired test's difference, interval, p, wins, losses
    and ties (None: no shared task, or a reward outside [0, 1])."""
    try:
        test = paired_test(by_task(a), by_task(b))
    except ValueError:
        return None
    if test.tasks == 0:
        return None
    return {
        "tasks": test.tasks,
        "diff": _num(test.difference),
        "low": _num(test.low),
        "high": _num(test.high),
        "p": _num(test.p_value),
        "wins": test.wins,
        "losses": test.losses,
        "ties": test.ties,
        "mean_a": _num(test.mean_a),
        "mean_b": _num(test.mean_b),
        "method": test.method,
        "only_a": len(test.only_a),
        "only_b": len(test.only_b),
        "text": test.text(),
    }


def _total(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) if present else None


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)
