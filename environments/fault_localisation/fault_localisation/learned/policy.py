"""The learned shortcut as a policy: run the plan, score each service with the shipped model, read the top one."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from arena_kit.policy import CallTool
from fault_localisation.learned.features import features
from arena_kit.adversaries.learned.weights import Model
from fault_localisation.learned.model import shipped
from fault_localisation.learned.plan import Observed, observe
from fault_localisation.observe import Context, Script, classify, submit

__all__ = ["DESCRIBE_LIMIT", "choose", "learned_script"]

DESCRIBE_LIMIT = 200


def choose(model: Model, ctx: Context, seen: Observed) -> tuple[str, float]:
    """The service the model ranks first and its probability, or ("none", p) below the model's threshold
    or when the plan saw users fail nowhere."""
    if seen.none:
        return "none", 0.0
    rows = features(ctx, seen)
    scored = sorted(((model.probability(row), name) for name, row in rows.items()), key=lambda pn: (-pn[0], pn[1]))
    if not scored or scored[0][0] < model.threshold:
        return "none", scored[0][0] if scored else 0.0
    return scored[0][1], scored[0][0]


def learned_script(variant: str, model: Model | None = None) -> Script:
    """The plan of `variant`, its model's choice (the shipped model unless `model` is given), then
    one read of that service (WARN+ after the first quarter hour) for the kind its wording points
    to. It cites no request: it never opens one."""

    def run(ctx: Context) -> Generator[CallTool, dict[str, Any], CallTool]:
        seen = yield from observe(ctx, variant)
        root, _ = choose(model or shipped(variant), ctx, seen)
        if root == "none":
            return submit("none")
        got = yield ctx.search(start=ctx.split, limit=DESCRIBE_LIMIT, service=root, min_level="WARN")
        return submit(root, classify([str(line) for line in got.get("lines", [])]) or "bad_deploy")

    run.__doc__ = (
        f"A gradient-boosted model trained on train incidents ({variant} features) ranks the services "
        "from at most six counts and searches (no trace filter); one read of the top one names its kind."
    )
    return run
