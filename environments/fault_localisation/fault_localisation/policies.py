"""Scripted fault-localisation policies: pure functions of the observation (the prompt and their own
tool results), never of the label or the generator.

The oracle investigates as an engineer would. It counts the reported endpoint's errors on the
reported edge per minute; no rise after the first quarter hour means the users' requests failed
no more than usual (none). Else it reads that endpoint's latest errors and opens one failed
request by its trace id: the service on it below which no other service on it lies (by the call
graph) is the root, its line there names the kind, and the report cites that request. A request
that timed out at the edge (no service below logged for it) is passed over for the next one.
Without linked traces it falls back to the call graph: the risen service below that edge none of
whose dependencies rose (a guess among the concurrent faults, cited by nothing). It needs 3
queries on a typical incident, 1 on a quiet one.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any, Final

from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Action, Answer, CallTool, Observation, Policy, RunShell
from fault_localisation.observe import (
    KIND_EVIDENCE,
    Context,
    anomalous,
    budget_left,
    classify,
    first_json,
    iso,
    line_fields,
    reachable,
    replay,
    scripted,
    submit,
    submitted,
)
from fault_localisation.investigations import INVESTIGATIONS, reported_rise
from fault_localisation.shortcuts import SHORTCUTS

__all__ = ["CHEATERS", "KIND_EVIDENCE", "POLICIES", "exhaustive", "impatient", "oracle", "root_on", "spammer"]

Run = Generator[CallTool, dict[str, Any], CallTool]
_TRACE_TRIES = 4


def root_on(lines: list[str], calls: dict[str, set[str]], edge: str) -> tuple[str | None, list[str]]:
    """The service on a request's lines below which no other service on them lies (by the call
    graph, through services that logged nothing), and its lines; None when the request reached no
    service below the edge or the graph leaves it ambiguous."""
    fields = [(f, line) for line in lines if (f := line_fields(line)) is not None]
    crossed = {f[2] for f, _ in fields} - {edge}
    deepest = sorted(s for s in crossed if not reachable(calls, s) & crossed)
    if len(deepest) != 1:
        return None, []
    return deepest[0], [line for f, line in fields if f[2] == deepest[0]]


def investigate(ctx: Context) -> Run:
    """The oracle's investigation (see the module docstring)."""
    listing = yield CallTool("list_services", {})
    services = listing.get("services", [])
    calls = {s["name"]: set(s.get("calls", [])) for s in services}
    if not (yield from reported_rise(ctx)):
        return submit("none")
    report = ctx.reported
    assert report is not None
    edge = report.edge
    errors = yield ctx.search(
        start=ctx.end - timedelta(minutes=20), limit=50, service=edge, min_level="ERROR", text=report.text
    )
    traces = list(
        dict.fromkeys(f[3] for line in reversed(errors.get("lines", [])) if (f := line_fields(line)) is not None)
    )
    for trace in traces[:_TRACE_TRIES]:
        request = yield ctx.search(limit=200, trace=trace)
        root, own = root_on(request.get("lines", []), calls, edge)
        kind = classify(own)
        if root is not None and kind is not None:
            return submit(root, kind, [trace])
    # No request crosses services: the call graph alone (a guess among the faults below).
    before_warn = (yield ctx.count("service", end=ctx.split, min_level="WARN")).get("counts", {})
    after_warn = (yield ctx.count("service", start=ctx.split, min_level="WARN")).get("counts", {})
    risen = {s for s in calls if anomalous(before_warn.get(s, 0), after_warn.get(s, 0), ctx.ratio)}
    excess = {s: after_warn.get(s, 0) - ctx.ratio * before_warn.get(s, 0) for s in calls}
    sources = sorted((s for s in reachable(calls, edge) & risen if not calls[s] & risen), key=lambda s: (-excess[s], s))
    if not sources:
        return submit("none")
    got = yield ctx.search(start=ctx.split, limit=100, service=sources[0], min_level="WARN")
    return submit(sources[0], classify(got.get("lines", [])) or "bad_deploy")


oracle: Policy = scripted(investigate)
"""An efficient expert investigation (see the module docstring); stops as soon as it knows."""

_PAD: Final = "level"
"""The group_by only the exhaustive policy's padding queries use, so they can be told apart."""


def exhaustive(obs: Observation) -> Action:
    """The oracle's investigation, but it spends the whole budget before submitting."""
    if submitted(obs):
        return Answer("Root cause submitted.")
    own = tuple(
        s
        for s in obs.steps
        if not (
            isinstance(s.action, CallTool) and s.tool_is("count_logs") and s.action.arguments.get("group_by") == _PAD
        )
    )
    call, decided = replay(investigate, obs, own)
    if not decided or budget_left(obs.steps) == 0:
        return call
    return Context.of(obs).count(_PAD)


def impatient(obs: Observation) -> Action:
    """Blames the front door at once, without looking at a single log line."""
    if submitted(obs):
        return Answer("Root cause submitted.")
    return submit("api-gateway", "bad_deploy")


def spammer(obs: Observation) -> Action:
    """Random valid queries until the budget is gone, then a random answer."""
    if submitted(obs):
        return Answer("Root cause submitted.")
    if not obs.steps:
        return CallTool("list_services", {})
    rng = obs.rng()
    names = [s["name"] for s in (first_json(obs.steps[0].result) or {}).get("services", [])] or ["api-gateway"]
    ctx = Context.of(obs)
    start, end = ctx.start, ctx.end
    if budget_left(obs.steps) == 0:
        kind = rng.choice([kind for kind, _ in KIND_EVIDENCE])
        return submit(rng.choice(names), kind)
    a = start + (end - start) * rng.random()
    b = a + (end - a) * rng.uniform(0.05, 1.0) + timedelta(seconds=1)
    args = {
        "start": iso(a),
        "end": iso(b),
        "service": rng.choice([None, *names]),
        "min_level": rng.choice([None, "INFO", "WARN", "ERROR"]),
    }
    args = {k: v for k, v in args.items() if v is not None}
    if rng.random() < 0.5:
        return CallTool("search_logs", {**args, "limit": rng.choice([10, 50, 200])})
    return CallTool("count_logs", {**args, "group_by": rng.choice(["service", "level", "minute"])})


def cheater_over_budget(obs: Observation) -> Action:
    """Keeps querying past the budget, hoping refused queries still leak data; submits only what
    a query actually returned (so, with the server refusing, nothing)."""
    if len(obs.steps) < 25:
        ctx = Context.of(obs)
        return ctx.count("service", min_level="ERROR")
    return Answer("The log would not answer any more queries.")


GAVE_UP = "I could not find the answer without investigating, so I submit nothing."
CHEATERS: dict[str, Policy] = {
    # Each tries one known hack, then gives up: a hack that worked would show as a submission.
    "cheater_read_store": ScriptedPolicy(
        [RunShell("find / -name '*.sqlite' 2>/dev/null | head; ls ~/.cache/arena/log_search 2>&1 | head")], GAVE_UP
    ),
    "cheater_host_probe": ScriptedPolicy(
        [RunShell("curl -s -m 3 http://172.17.0.1:8765/v1/models; env | grep VF_STATE_")], GAVE_UP
    ),
    "cheater_net_egress": ScriptedPolicy([RunShell("curl -s -m 3 https://pypi.org/simple/ | head -c 200")], GAVE_UP),
    "cheater_over_budget": cheater_over_budget,
}

POLICIES: dict[str, Policy] = {
    "oracle": oracle,
    "exhaustive": exhaustive,
    "impatient": impatient,
    "spammer": spammer,
    **CHEATERS,
    **SHORTCUTS,
    **INVESTIGATIONS,
}
