"""Three honest investigations written from the prompt alone (no knowledge of how incidents are
generated): what an engineer who read only the instructions does. Each reports with the evidence
the prompt asks for. They are published as investigations (`investigate_*`): the gate reports
them and the acceptance holds them to ≥ 0.90, so the prompt and tool docs must be enough to solve
the task.

- `investigate_first_to_fail` reads one failed request in time order, as the prompt describes it
  (the edge receives it, the failing service logs first, then its callers, then the edge answers):
  the first service below the edge to log on it is the root; its words name the kind from an
  engineer's own keyword list.
- `investigate_graph_walk` reads a failed request's path against the call graph: the service on
  it that calls, directly or through others, none of the other services on it is the root; the
  kind is the one whose description in the prompt shares most words with the root's lines.
- `investigate_follow_blame` never reads the call graph: on a failed request's lines, each caller
  blames the service it names ("call to X failed"); it follows the blame down the request to the
  service on it that blames no other one there (the earliest such line on a tie).
"""

from __future__ import annotations

import re
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from arena_kit.policy import CallTool, Observation, Policy
from fault_localisation.observe import Context, line_fields, reachable, scripted, submit, ts

__all__ = ["ENGINEERS"]

Run = Generator[CallTool, dict[str, Any], CallTool]
_TRIES = 4
"""Failed requests opened before giving up (some time out at the edge before anything below logged)."""

_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("connection_pool_exhaustion", ("pool",)),
    ("oom_restart_loop", ("oomkilled", "out of memory", "heap", "back-off restarting")),
    ("certificate_expiry", ("certificate", "x509", "tls")),
    ("disk_full", ("no space left", "disk usage", "disk full")),
    ("dns_failure", ("no such host", "name resolution", "dns", "getaddrinfo")),
    ("config_error", ("configuration", "misconfigured", "config")),
    ("rate_limited", ("429", "too many requests", "quota", "throttl")),
    ("cache_stampede", ("hot key", "miss ratio", "concurrent misses", "cache")),
    ("clock_skew", ("clock", "ntp")),
    ("bad_deploy", ("exception", "internal server error", "typeerror", "nullpointer")),
)
"""What an on-call engineer greps for each kind in the prompt's vocabulary, most specific first."""


def _keyword_kind(messages: list[str]) -> str | None:
    votes: dict[str, int] = {}
    for message in messages:
        low = message.lower()
        for kind, words in _KEYWORDS:
            if any(word in low for word in words):
                votes[kind] = votes.get(kind, 0) + 1
                break
    return max(votes, key=lambda k: votes[k]) if votes else None


def _request(got: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    return [f for line in got.get("lines", []) if (f := line_fields(str(line))) is not None]


def _latest_ids(got: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(f[3] for f in reversed(_request(got))))


def first_to_fail(ctx: Context) -> Run:
    """Rise check on the reported endpoint, then the first service below the edge to log on its
    latest failed requests (see the module docstring)."""
    report = ctx.reported
    if report is None:
        raise ValueError("the prompt names no reported endpoint")
    per_minute = (yield ctx.count("minute", service=report.edge, min_level="ERROR", text=report.text)).get("counts", {})
    early = sum(n for m, n in per_minute.items() if ts(m) < ctx.start + timedelta(minutes=15))
    late = sum(n for m, n in per_minute.items() if ts(m) >= ctx.end - timedelta(minutes=15))
    if late < max(5, 3 * early):
        return submit("none")
    failed = yield ctx.search(
        start=ctx.end - timedelta(minutes=15), service=report.edge, min_level="ERROR", text=report.text, limit=20
    )
    for trace in _latest_ids(failed)[:_TRIES]:
        lines = _request((yield ctx.search(trace=trace, limit=100)))
        first = next((f for f in lines if f[2] != report.edge), None)
        if first is None:  # timed out at the edge: nothing below logged for it
            continue
        kind = _keyword_kind([first[4]]) or _keyword_kind([f[4] for f in lines if f[2] == first[2]])
        if kind is None:
            own = yield ctx.search(start=ctx.end - timedelta(minutes=10), service=first[2], min_level="WARN", limit=30)
            kind = _keyword_kind([f[4] for f in _request(own)])
        return submit(first[2], kind or "bad_deploy", [trace])
    return submit("none")


_KIND_LINE = re.compile(r"^- ([a-z_]+): (.+)$", re.MULTILINE)
_COMMON = {"serv", "that", "with", "from", "them", "they", "keep", "each", "call", "thei", "once", "fail"}


def _kind_descriptions(prompt: str) -> dict[str, set[str]]:
    """Each fault kind's description words, from the prompt's list under "Fault kinds"."""
    block = prompt.split("Fault kinds", 1)[-1].split("\n\n", 1)[0]
    return {kind: _stems(text) for kind, text in _KIND_LINE.findall(block)}


def _stems(text: str) -> set[str]:
    """Words of four letters or more, cut to four (`pooled` and `pool` meet), common ones left out."""
    return {w[:4] for w in re.findall(r"[a-z]{4,}", text.lower())} - _COMMON


def _described_kind(descriptions: dict[str, set[str]], messages: list[str], names: set[str]) -> str | None:
    """The kind with most description words inside `messages`' words (`misconfigured` holds
    `conf`), service names left out (`redis-cache` says nothing of a cache's fault); an unhandled
    exception is a code defect whatever its words. None on a tie."""
    longest_first = sorted(names, key=len, reverse=True)

    def plain(message: str) -> str:
        for name in longest_first:
            message = message.replace(name, " ")
        return message.lower()

    words = [set(re.findall(r"[a-z]{4,}", plain(m))) for m in messages]
    score = {
        kind: sum(sum(any(stem in w for w in ws) for stem in stems) for ws in words)
        for kind, stems in descriptions.items()
    }
    ranked = sorted(score.values(), reverse=True)
    if ranked and ranked[0] > 0 and (len(ranked) == 1 or ranked[0] > ranked[1]):
        return max(score, key=lambda k: score[k])
    if any("exception" in m.lower() for m in messages):
        return "bad_deploy" if "bad_deploy" in descriptions else None
    return None


def graph_walk(obs: Observation) -> Run:
    """Rise check by two counts, then the bottom of a failed request's path on the call graph (see
    the module docstring)."""
    ctx = Context.of(obs)
    descriptions = _kind_descriptions(obs.prompt)
    report = ctx.reported
    if report is None:
        raise ValueError("the prompt names no reported endpoint")
    listing = yield CallTool("list_services", {})
    calls = {str(s["name"]): {str(c) for c in s.get("calls", [])} for s in listing.get("services", [])}
    quarter = timedelta(minutes=20)
    early = (
        yield ctx.count("level", end=ctx.start + quarter, service=report.edge, min_level="ERROR", text=report.text)
    ).get("total", 0)
    late = (
        yield ctx.count("level", start=ctx.end - quarter, service=report.edge, min_level="ERROR", text=report.text)
    ).get("total", 0)
    if late <= 2 * early + 3:
        return submit("none")
    failed = yield ctx.search(
        start=ctx.end - quarter, service=report.edge, min_level="ERROR", text=report.text, limit=50
    )
    ids = _latest_ids(failed)
    middle = len(ids) // 2
    for trace in (ids[middle:] + ids[:middle])[:_TRIES]:
        lines = _request((yield ctx.search(trace=trace, limit=100)))
        on = {f[2] for f in lines} - {report.edge}
        bottoms = [s for s in sorted(on) if not reachable(calls, s) & on]
        if len(bottoms) != 1:
            continue
        root = bottoms[0]
        kind = _described_kind(descriptions, [f[4] for f in lines if f[2] == root], set(calls))
        if kind is None:
            own = yield ctx.search(start=ctx.end - timedelta(minutes=10), service=root, min_level="WARN", limit=30)
            kind = _described_kind(descriptions, [f[4] for f in _request(own)], set(calls))
        return submit(root, kind or "bad_deploy", [trace])
    return submit("none")


def _mentions(message: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", message) is not None


def follow_blame(obs: Observation) -> Run:
    """Rise check on the last ten minutes against the first, then blame followed down a failed
    request (see the module docstring)."""
    ctx = Context.of(obs)
    descriptions = _kind_descriptions(obs.prompt)
    report = ctx.reported
    if report is None:
        raise ValueError("the prompt names no reported endpoint")
    ten = timedelta(minutes=10)
    early = (
        yield ctx.count("level", end=ctx.start + ten, service=report.edge, min_level="ERROR", text=report.text)
    ).get("total", 0)
    failed = yield ctx.search(start=ctx.end - ten, service=report.edge, min_level="ERROR", text=report.text, limit=40)
    if int(failed.get("matched", 0)) < max(4, 3 * early):
        return submit("none")
    for trace in _latest_ids(failed)[:_TRIES]:
        lines = [f for f in _request((yield ctx.search(trace=trace, limit=100))) if f[2] != report.edge]
        on = list(dict.fromkeys(f[2] for f in lines))
        blames = {s: {o for f in lines if f[2] == s for o in on if o != s and _mentions(f[4], o)} for s in on}
        blamed = [s for s in on if not blames[s]]
        if not blamed:
            continue
        root = blamed[0]
        own = [f[4] for f in lines if f[2] == root]
        kind = _described_kind(descriptions, own, set(on)) or _keyword_kind(own)
        return submit(root, kind or "bad_deploy", [trace])
    return submit("none")


def _with_prompt(script: Any) -> Policy:
    """A policy playing `script`, which also reads the prompt's fault-kind descriptions."""

    def policy(obs: Observation) -> Any:
        return scripted(lambda _ctx: script(obs))(obs)

    policy.__doc__ = script.__doc__
    return policy


ENGINEERS: dict[str, Policy] = {
    "investigate_first_to_fail": scripted(first_to_fail),
    "investigate_graph_walk": _with_prompt(graph_walk),
    "investigate_follow_blame": _with_prompt(follow_blame),
}
