"""Pure grader: credit for the root-cause service when the report's evidence supports it, then its
fault kind, all scaled by how economically the agent queried.

A right service earns its full credit only with supporting evidence (`evidence.check`): the report
cites failed requests to the reported endpoint whose lines, as the agent opened them, show that
service failing. Without it a right service is worth `unsupported`, so naming one of the failing
services at random earns next to nothing. The kind adds to a supported service only. Nothing is
credited for dating the onset: every concurrent fault starts within seconds of the others, so an
onset separates nothing. The efficiency factor is 1.0 up to `free_queries` (what a careful
investigation needs) and falls linearly after.
"""

from __future__ import annotations

from dataclasses import dataclass

from fault_localisation.generate import Label

__all__ = ["RULES", "Claim", "Grade", "Rules", "efficiency", "grade"]


@dataclass(frozen=True)
class Rules:
    service: float = 0.7
    """The right service, supported by the report's evidence."""
    kind: float = 0.3
    """The right fault kind, on a supported right service."""
    unsupported: float = 0.1
    """The right service without supporting evidence (the kind earns nothing then)."""
    free_queries: int = 7
    penalty_per_query: float = 0.04
    min_efficiency: float = 0.3


RULES = Rules()


@dataclass(frozen=True)
class Claim:
    """What the agent submitted."""

    service: str
    fault_kind: str
    evidence: tuple[str, ...] = ()
    """Trace ids of the requests the claim rests on."""


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


def grade(
    claim: Claim | None,
    label: Label,
    queries_used: int,
    support: tuple[bool, str] = (False, "no evidence"),
    rules: Rules = RULES,
) -> Grade:
    """`support`: whether the claim's evidence supports its service, and why (`evidence.check`)."""
    factor = efficiency(queries_used, rules)
    correctness, reason = _correctness(claim, label, support, rules)
    return Grade(round(correctness * factor, 6), reason, correctness, factor, queries_used)


def _correctness(claim: Claim | None, label: Label, support: tuple[bool, str], rules: Rules) -> tuple[float, str]:
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
    supported, why = support
    if not supported:
        return rules.unsupported, f"service right but unsupported ({why})"
    credit, notes = rules.service, [f"service right, supported ({why})"]
    if claim.fault_kind == label.fault_kind:
        credit += rules.kind
        notes.append("kind right")
    else:
        notes.append(f"kind wrong ({claim.fault_kind}, was {label.fault_kind})")
    return round(credit, 6), "; ".join(notes)
