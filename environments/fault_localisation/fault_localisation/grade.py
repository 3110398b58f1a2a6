"""Pure grader: credit for the root-cause service, then its fault kind and onset, all scaled by
how economically the agent queried.

Naming the right service is the main credit; kind and onset only add to a right service. The
efficiency factor is 1.0 up to `free_queries` (what a careful investigation needs) and falls
linearly after, so spending the whole default budget of 20 and then answering right scores
about half of stopping early. The oracle's focused investigation takes 5 queries; `free_queries`
leaves room for one wrong trace or a second look.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fault_localisation.generate import Label

__all__ = ["RULES", "Claim", "Grade", "Rules", "efficiency", "grade"]


@dataclass(frozen=True)
class Rules:
    service: float = 0.6
    kind: float = 0.25
    onset: float = 0.15
    onset_tolerance_s: float = 120.0
    free_queries: int = 7
    penalty_per_query: float = 0.04
    min_efficiency: float = 0.3


RULES = Rules()


@dataclass(frozen=True)
class Claim:
    """What the agent submitted."""

    service: str
    fault_kind: str
    onset: str | None


@dataclass(frozen=True)
class Grade:
    score: float
    reason: str
    correctness: float
    """Credit before the efficiency factor."""
    efficiency: float
    queries_used: int


def efficiency(queries_used: int, rules: Rules = RULES) -> float:
    over = max(0, queries_used - rules.free_queries)
    return max(rules.min_efficiency, 1.0 - rules.penalty_per_query * over)


def grade(claim: Claim | None, label: Label, queries_used: int, rules: Rules = RULES) -> Grade:
    factor = efficiency(queries_used, rules)
    correctness, reason = _correctness(claim, label, rules)
    return Grade(round(correctness * factor, 6), reason, correctness, factor, queries_used)


def _correctness(claim: Claim | None, label: Label, rules: Rules) -> tuple[float, str]:
    if claim is None:
        return 0.0, "no root cause was submitted"
    if label.service == "none":
        if claim.service == "none":
            return 1.0, "no incident, correctly reported as none"
        return 0.0, f"no incident, but named {claim.service}"
    if claim.service == "none":
        return 0.0, f"reported no incident, but {label.service} failed"
    if claim.service != label.service:
        return 0.0, f"wrong service: named {claim.service}, root cause was {label.service}"
    credit, notes = rules.service, ["service right"]
    if claim.fault_kind == label.fault_kind:
        credit += rules.kind
        notes.append("kind right")
    else:
        notes.append(f"kind wrong ({claim.fault_kind}, was {label.fault_kind})")
    offset = _seconds_between(claim.onset, label.onset)
    if offset is not None and offset <= rules.onset_tolerance_s:
        credit += rules.onset
        notes.append(f"onset within {offset:.0f}s")
    else:
        notes.append("onset missing" if offset is None else f"onset off by {offset:.0f}s")
    return round(credit, 6), "; ".join(notes)


def _seconds_between(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    try:
        return abs((datetime.fromisoformat(a) - datetime.fromisoformat(b)).total_seconds())
    except (TypeError, ValueError):  # unparsable, or naive against aware
        return None
