"""The agent's instructions: the tools, the incident window, the budget and the answer vocabulary.

Scripted policies read the window, the reported endpoint and the budget back from this text (see
`observe`), so the sentences carrying them keep a fixed shape: "failing requests to <METHOD>
<route> on <edge> between <start> and <end> (UTC)" and "a budget of <n> queries".
"""

from __future__ import annotations

from fault_localisation.catalogue import FAULT_KINDS
from fault_localisation.generate import Incident, iso

__all__ = ["SYSTEM_PROMPT", "task_prompt"]

SYSTEM_PROMPT = (
    "You are an on-call site reliability engineer. You investigate incidents from their logs, "
    "which you can only reach through the log_search tools, and you report the root cause."
)


def task_prompt(incident: Incident, budget: int, free_queries: int) -> str:
    kinds = "\n".join(f"- {kind.id}: {kind.description}" for kind in FAULT_KINDS)
    traces = (" Each line carries the trace id of its request (trace=<id>), shared by every service the "
              "request crossed.") if incident.knobs.traces else ""
    method, route = incident.endpoint
    return f"""\
In a production system of {len(incident.services)} services, users reported failing requests to \
{method} {route} on {incident.edge} between {iso(incident.start_ms)} and {iso(incident.end_ms)} (UTC). \
Find the root cause of those failures, if there is one.

The logs are not in your workspace; query them with the log_search tools:
- list_services(): every service, its role and the services it calls (free)
- search_logs(start, end, service, min_level, text, trace, limit): matching log lines, oldest first (1 query)
- count_logs(start, end, group_by, service, min_level, text, trace): line counts per service, level or minute \
(1 query)
- budget(): queries used and remaining (free)
- submit_root_cause(service, fault_kind, onset): your final answer, accepted once (free)

You have a budget of {budget} queries. A focused investigation needs about {free_queries}; every \
query beyond that lowers your score. Failures spread from a failing service to the services that \
call it, which report them in their own logs, sometimes in the failing service's words and \
sometimes before it logs anything itself. Users only reach the edge services; a failure in a \
service no edge service depends on, directly or through others, is not the cause of their \
errors. Other services may be failing at the same time, failing other requests; only the cause of \
the reported requests' failures counts. Edge services log each request's endpoint and status, not \
which upstream failed it. Some services are noisy, chronically log warnings that look alarming, or \
were redeployed for unrelated reasons.{traces}

Fault kinds (submit the id):
{kinds}

Answer by calling submit_root_cause with the root-cause service, its fault kind id, and the onset: \
the ISO timestamp of the root cause's first anomalous log line, a warning that preceded its errors \
included (within two minutes counts). If the reported requests did not fail beyond their usual rate in \
the window, submit service "none".
"""
