"""The agent's instructions: the tools, the incident window, the budget and the answer vocabulary.

Scripted policies read the window, the reported endpoint and the budget back from this text (see
`observe`), so the sentences carrying them keep a fixed shape: "failing requests to <METHOD>
<route> on <edge> between <start> and <end> (UTC)" and "a budget of <n> queries".
"""

from __future__ import annotations

from fault_localisation.catalogue import FAULT_KINDS
from fault_localisation.generate import Incident, iso
from log_search.toolset import MAX_EVIDENCE, MAX_QUOTED_LINES

__all__ = ["SYSTEM_PROMPT", "task_prompt"]

SYSTEM_PROMPT = (
    "You are an on-call site reliability engineer. You investigate incidents from their logs, "
    "which you can only reach through the log_search tools, and you report the root cause."
)


def task_prompt(incident: Incident, budget: int, free_queries: int) -> str:
    kinds = "\n".join(f"- {kind.id}: {kind.description}" for kind in FAULT_KINDS)
    method, route = incident.endpoint
    if incident.knobs.traces:
        traces = """\
Each line carries the trace id of the request it belongs to (trace=<id>): one request, one trace \
id, shared by every service the request crossed. search_logs(trace=<id>) returns that request's \
lines in time order. An edge service logs each request it serves twice: when it receives it \
("received <METHOD> <path>", DEBUG) and when it answers it (its access line "<METHOD> <path> \
<status> <duration>ms"; a failed request is logged as ERROR). In between, the services the request \
reached log what went wrong with it: the failing service first, then each caller on the way back \
up. A service may pass a request on without logging it, and some failed requests time out at \
the edge before any service below it logged anything for them."""
        cite = f"""\
- evidence: the trace ids (1 to {MAX_EVIDENCE}) of failed requests to {method} {route} on \
{incident.edge} that you opened with search_logs(trace=<id>) and whose lines, in that search's \
result, show the service you name failing.
- lines (optional): up to {MAX_QUOTED_LINES} log lines of the cited requests, quoted exactly as \
search_logs printed them."""
    else:
        traces = "Every line carries its own trace id (trace=<id>): this log does not link a request's lines."
        cite = f"""\
- evidence: the trace ids (1 to {MAX_EVIDENCE}) of the requests your claim rests on (this log \
cannot show a request's path, so no claim here is supported in full).
- lines (optional): up to {MAX_QUOTED_LINES} log lines of the cited requests, quoted exactly as \
search_logs printed them."""
    return f"""\
In a production system of {len(incident.services)} services, users reported failing requests to \
{method} {route} on {incident.edge} between {iso(incident.start_ms)} and {iso(incident.end_ms)} (UTC). \
Find the root cause of those failures, if there is one, and report it with the evidence it rests on.

The logs are not in your workspace; query them with the log_search tools:
- list_services(): every service, its role and the services it calls (free)
- search_logs(start, end, service, min_level, text, trace, limit): matching log lines, oldest first (1 query)
- count_logs(start, end, group_by, service, min_level, text, trace): line counts per service, level or minute \
(1 query)
- budget(): queries used and remaining (free)
- submit_root_cause(service, fault_kind, evidence, lines): your final report, accepted once (free)

You have a budget of {budget} queries. A focused investigation needs about {free_queries}; every \
query beyond that lowers your score.

{traces}

Failures spread from a failing service to the services that call it, which report them in their \
own logs, sometimes in the failing service's words and sometimes before it logs anything itself. \
Users only reach the edge services; a failure in a service no edge service depends on, directly \
or through others, is not the cause of their errors. Other services may be failing at the same \
time, starting at the same moment, failing other requests (other endpoints of the same edge \
service among them); only the cause of the reported requests' failures counts. Edge services log \
each request's endpoint and status, not which upstream failed it. Some services are noisy, \
chronically log warnings that look alarming, or were redeployed for unrelated reasons.

Fault kinds (submit the id):
{kinds}

Your report (submit_root_cause):
- service: the root cause, the failing service whose failure made the reported requests fail; \
fault_kind: its fault kind id.
{cite}
If the reported requests did not fail beyond their usual rate in the window, submit service \
"none" with no fault kind, evidence or lines.

Credit: the right service with supporting evidence 0.7, plus 0.3 for its right fault kind; the \
right service without supporting evidence 0.1; a wrong service, or "none" while the reported \
requests did fail (or a service while they did not), 0. Evidence supports the claim only when \
every request it cites is one of the reported failed requests and your search by its trace id \
returned the named service's line.
"""
