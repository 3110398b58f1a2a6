"""The evidence rule: when a report's cited requests support the service it names.

A claim is supported when it cites 1 to `MAX_EVIDENCE` requests (trace ids) and every one of them
is a users' failed request to the reported endpoint in the incident window whose lines show the
named service failing (`fault_stream.users_requests`: the root wrote a line for it), and the agent
opened it: a search by that trace id returned the named service's line. What an adversary can
cite earns nothing: a concurrent fault's request failed another endpoint, a request before the
users' failure or from another incident is not a users' request, an id read off the reported
edge's access log but never opened shows the agent nothing, and a handful of ids at once is
capped and must all hold. Trace ids are 64 random bits, so none can be guessed.
"""

from __future__ import annotations

from collections.abc import Iterable

from fault_localisation.fault_stream import users_requests
from fault_localisation.generate import Incident
from log_search.toolset import MAX_EVIDENCE, QueryRecord

__all__ = ["Opened", "check", "opened"]

Opened = dict[str, set[str]]
"""Trace id -> the services whose lines the agent's searches by that id returned."""


def opened(queries: Iterable[QueryRecord]) -> Opened:
    """What the agent saw of each request it searched by trace id (its charged query log)."""
    seen: Opened = {}
    for query in queries:
        trace = query.args.get("trace")
        if query.tool == "search_logs" and isinstance(trace, str) and query.services is not None:
            seen.setdefault(trace, set()).update(query.services)
    return seen


def check(service: str, evidence: tuple[str, ...], incident: Incident, seen: Opened) -> tuple[bool, str]:
    """Whether `evidence` supports naming `service` as the root cause of `incident`, and why not."""
    if not evidence:
        return False, "no request cited"
    if len(evidence) > MAX_EVIDENCE:
        return False, f"{len(evidence)} requests cited, at most {MAX_EVIDENCE} count"
    if incident.fault is None or service != incident.fault.root.service:
        return False, "the named service is not the root cause"
    users = users_requests(incident)
    for trace in evidence:
        if trace not in users:
            return False, f"{trace} is not a failed request to the reported endpoint that shows {service} failing"
        if service not in seen.get(trace, set()):
            return False, f"{trace} was never opened to show {service}'s line (search_logs with trace={trace})"
    return True, f"{len(evidence)} opened request{'s' if len(evidence) > 1 else ''} show it failing"
