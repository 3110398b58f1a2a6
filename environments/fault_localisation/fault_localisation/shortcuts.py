"""Shortcut policies: honest, observation-only strategies that skip the investigation (a keyword
grep, "the loudest service", "whatever broke first"). Each is tuned to do as well as its idea
honestly can; the gate holds every one far below the oracle (`arena_kit.scripted.SHORTCUT_PREFIX`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from arena_kit.policy import Action, CallTool, Observation, Policy
from fault_localisation.investigations import reported_rise
from fault_localisation.learned import LEARNED
from fault_localisation.observe import (
    KIND_PHRASES,
    Context,
    Filters,
    anomalous,
    change_minute,
    classify,
    fts,
    line_fields,
    reachable,
    scripted,
    submit,
)

if TYPE_CHECKING:
    from log_search.store import Level

__all__ = ["SHORTCUTS"]

Run = Generator[CallTool, dict[str, Any], CallTool]
_CATALOGUE = [phrase for _, phrases in KIND_PHRASES for phrase in phrases]
_KIND_LINE = re.compile(r"^- ([a-z_]+): (.+)$", re.MULTILINE)
_STOPWORDS = {
    "service",
    "services",
    "their",
    "which",
    "there",
    "these",
    "those",
    "about",
    "after",
    "again",
    "being",
    "other",
    "every",
    "where",
    "while",
    "cannot",
    "longer",
}


def _describe(ctx: Context, service: str, since: datetime | None = None, evidence: tuple[str, ...] = ()) -> Run:
    """Name `service` with the kind its WARN+ wording points to."""
    since = max(ctx.start, since or ctx.split)
    got = yield ctx.search(start=since, limit=200, service=service, min_level="WARN")
    return submit(service, classify(got.get("lines", [])) or "bad_deploy", evidence)


def _oldest_hit(got: dict[str, Any], kind_of: Callable[[str], str]) -> CallTool:
    for line in got.get("lines", []):
        fields = line_fields(line)
        if fields is not None:
            return submit(fields[2], kind_of(fields[4]))
    return submit("none")


def _catalogue_kind(message: str) -> str:
    return classify([f"t L s i trace=0 {message}"]) or "bad_deploy"


def grep_catalogue(ctx: Context) -> Run:
    """One search ORing the catalogue's telltale phrases over the incident (after the quiet first
    quarter hour); the oldest hit names the service, its wording the kind, its time the onset."""
    got = yield ctx.search(start=ctx.split, limit=20, text=fts(_CATALOGUE), min_level="WARN")
    return _oldest_hit(got, _catalogue_kind)


def _description_words(prompt: str) -> dict[str, set[str]]:
    """Each kind's distinctive description words (in no other kind's description)."""
    block = prompt.split("Fault kinds", 1)[-1].split("\n\n", 1)[0]
    words = {
        kind: {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in _STOPWORDS}
        for kind, text in _KIND_LINE.findall(block)
    }
    return {
        kind: {w for w in own if not any(w in other for k, other in words.items() if k != kind)}
        for kind, own in words.items()
    }


def grep_descriptions(obs: Observation) -> Action:
    """One search ORing the distinctive words of the prompt's kind descriptions; the oldest hit
    after the first quarter hour names the service, the kind whose words it shares, the onset."""
    words = _description_words(obs.prompt)

    def kind_of(message: str) -> str:
        found = set(re.findall(r"[a-z]+", message.lower()))
        return max(sorted(words), key=lambda k: len(words[k] & found)) if words else "bad_deploy"

    def run(ctx: Context) -> Run:
        # The toolset caps a query at 64 terms: each kind's three longest words fit.
        vocabulary = sorted({w for own in words.values() for w in sorted(own, key=lambda w: (-len(w), w))[:3]})
        got = yield ctx.search(start=ctx.split, limit=20, text=" OR ".join(vocabulary), min_level="WARN")
        return _oldest_hit(got, kind_of)

    return scripted(run)(obs)


def _excess(before: dict[str, int], after: dict[str, int], ratio: float) -> dict[str, float]:
    return {s: after.get(s, 0) - ratio * before.get(s, 0) for s in set(before) | set(after)}


def _rise(
    ctx: Context, **filters: Unpack[Filters]
) -> Generator[CallTool, dict[str, Any], tuple[dict[str, int], dict[str, int]]]:
    before = (yield ctx.count("service", end=ctx.split, **filters)).get("counts", {})
    after = (yield ctx.count("service", start=ctx.split, **filters)).get("counts", {})
    return before, after


def _risen(before: dict[str, int], after: dict[str, int], ratio: float) -> list[str]:
    """Services whose rate rose significantly, biggest rise first."""
    excess = _excess(before, after, ratio)
    return sorted(
        (s for s in excess if anomalous(before.get(s, 0), after.get(s, 0), ratio)), key=lambda s: (-excess[s], s)
    )


def grep_rise(ctx: Context) -> Run:
    """Counts the catalogue's phrases per service before and after the first quarter hour; the
    service whose phrase rate rose most is named (its lines then give kind and onset)."""
    before, after = yield from _rise(ctx, text=fts(_CATALOGUE))
    risen = _risen(before, after, ctx.ratio)
    if not risen:
        return submit("none")
    return (yield from _describe(ctx, risen[0]))


def most_errors(ctx: Context) -> Run:
    """The service with the most ERROR lines after the first quarter hour."""
    after = (yield ctx.count("service", start=ctx.split, min_level="ERROR")).get("counts", {})
    if not after:
        return submit("none")
    return (yield from _describe(ctx, max(sorted(after), key=lambda s: after[s])))


def biggest_rise(ctx: Context) -> Run:
    """The service whose WARN+ rate rose most after the first quarter hour (none if nothing rose)."""
    before, after = yield from _rise(ctx, min_level="WARN")
    risen = _risen(before, after, ctx.ratio)
    if not risen:
        return submit("none")
    return (yield from _describe(ctx, risen[0]))


def _earliest(ctx: Context, level: Level, candidates: int) -> Run:
    before, after = yield from _rise(ctx, min_level=level)
    risen = _risen(before, after, ctx.ratio)[:candidates]
    dated: dict[str, datetime] = {}
    for service in risen:
        got = yield ctx.count("minute", service=service, min_level=level)
        at = change_minute(got.get("counts", {}), ctx.start, ctx.end)
        if at is not None:
            dated[service] = at
    if not dated:
        return submit("none")
    first = min(dated, key=lambda s: (dated[s], risen.index(s)))
    return (yield from _describe(ctx, first, dated[first] - timedelta(minutes=6)))


def earliest_error_burst(ctx: Context) -> Run:
    """The service whose ERROR rate stepped up first (among the four that rose most)."""
    return (yield from _earliest(ctx, "ERROR", 4))


def earliest_anomaly(ctx: Context) -> Run:
    """The service whose WARN+ rate stepped up first (among the four that rose most), ignoring
    who calls whom."""
    return (yield from _earliest(ctx, "WARN", 4))


_ROOT_WORDING: dict[str, tuple[str, ...]] = {
    "connection_pool_exhaustion": (
        '("acquiring connection" NOT retried)',
        '"could not get a connection"',
        '"nearly exhausted"',
        '"saturated: active"',
    ),
    "bad_deploy": (
        '("unhandled exception in" NOT malformed)',
        '("NullPointerException at" NOT "returned 400")',
        '"Internal Server Error on"',
    ),
    "oom_restart_loop": ('("container terminated" NOT sidecar)', '"back-off restarting"', '"cannot reclaim"'),
    "certificate_expiry": ('"serving certificate"',),
    "disk_full": ('("could not write to file" NOT scratch)', '"lib data"', '"append to write"'),
    "dns_failure": ('"internal on"', '"resolver timed out"', '"getaddrinfo"'),
    "config_error": ('"positive integer"', '"missing key"', '"keeping the previous value"'),
    "rate_limited": ('("Too Many Requests" NOT queued)', '"request quota exceeded"'),
    "cache_stampede": ('("hot key product" NOT waiting)', '"output buffer overflow"'),
    "clock_skew": ('("clock offset" NOT slewing NOT issuer)', '"synchronisation lost"'),
}
"""The wording of a failing root's own storm and precursor lines, without the tails that mark a
chronic look-alike as harmless ("retried and succeeded", "scratch volume") or a caller's quote."""
_ROOT_TERMS = [p for phrases in _ROOT_WORDING.values() for p in phrases]
_HANDLED = (
    "retried",
    "succeeded",
    "retry",
    "returned 400",
    "scheduled",
    "queued",
    "coalesced",
    "slewing",
    "disabled",
    "ignored",
    "restarted",
    "below critical",
    "scratch",
    "malformed",
    "said",
    "call to",
    "waiting on",
    "token from",
    "write to",
    "handshake with",
    "client certificate",
)
"""Generic words an engineer reads as "handled" or "a symptom about someone else"."""


_TERM = re.compile(r'"[^"]*"?|[^\s()"]+')
_MAX_TERMS = 64
"""The toolset's cap on words, phrases and operators in one query's text."""


def _chunked(terms: list[str], suffix: str = "") -> list[str]:
    """ORs of `terms` (FTS expressions), each followed by `suffix`, each within the term cap."""
    texts: list[str] = []
    chunk: list[str] = []
    for term in terms:
        if chunk and len(_TERM.findall(f"({' OR '.join([*chunk, term])}){suffix}")) > _MAX_TERMS:
            texts.append(f"({' OR '.join(chunk)}){suffix}")
            chunk = []
        chunk.append(term)
    return [*texts, f"({' OR '.join(chunk)}){suffix}"]


def _grep(
    ctx: Context, texts: list[str], start: datetime, limit: int, min_level: Level
) -> Generator[CallTool, dict[str, Any], list[str]]:
    """Every line matching any of `texts` (one search each), oldest first."""
    lines: list[str] = []
    for text in texts:
        lines += (yield ctx.search(start=start, limit=limit, text=text, min_level=min_level)).get("lines", [])
    return sorted(lines)


def _users_side(services: list[dict[str, Any]]) -> set[str]:
    """Inner services with a call path up to an edge (the prompt: only their failures reach users)."""
    roles = {s["name"]: s.get("role") for s in services}
    calls = {s["name"]: s.get("calls", []) for s in services}
    reached = {name for name, role in roles.items() if role == "edge"}
    todo = list(reached)
    while todo:
        for dep in calls.get(todo.pop(), []):
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    return {name for name in reached if roles.get(name) != "edge"}


def root_wording(ctx: Context) -> Run:
    """Greps the wording only a failing root writes (its storm and precursor lines, not the
    harmless tails of look-alikes), drops services that already wrote it in the quiet first
    quarter hour (chronic), and names the oldest later hit on a service that can reach users
    (list_services: free), with that wording's kind and its time."""
    listing = yield CallTool("list_services", {})
    users = _users_side(listing.get("services", []))
    texts = _chunked(_ROOT_TERMS)
    chronic: set[str] = set()
    for text in texts:
        chronic |= set((yield ctx.count("service", end=ctx.split, min_level="WARN", text=text)).get("counts", {}))
    for line in (yield from _grep(ctx, texts, start=ctx.split, limit=200, min_level="WARN")):
        fields = line_fields(line)
        if fields is not None and fields[2] in users and fields[2] not in chronic:
            return submit(fields[2], _catalogue_kind(fields[4]))
    return submit("none")


def grep_reach(ctx: Context) -> Run:
    """The catalogue grep without lines in generic "handled / about someone else" words, keeping
    only services that can reach users (list_services: free): the oldest hit is named. The
    catalogue's phrases take a few queries under the toolset's term cap."""
    listing = yield CallTool("list_services", {})
    users = _users_side(listing.get("services", []))
    texts = _chunked([f'"{p}"' for p in _CATALOGUE], f" NOT ({fts(_HANDLED)})")
    for line in (yield from _grep(ctx, texts, start=ctx.split, limit=200, min_level="WARN")):
        fields = line_fields(line)
        if fields is not None and fields[2] in users:
            return submit(fields[2], _catalogue_kind(fields[4]))
    return submit("none")


def _failing_roots(
    ctx: Context, calls: dict[str, set[str]], edge: str
) -> Generator[CallTool, dict[str, Any], list[str]]:
    """The services below `edge` whose WARN+ rate rose while none of their dependencies' did: the
    incident's failing roots as rates and the call graph show them (2 queries)."""
    before, after = yield from _rise(ctx, min_level="WARN")
    risen = set(_risen(before, after, ctx.ratio))
    return sorted(s for s in reachable(calls, edge) & risen if not calls.get(s, set()) & risen)


def _graph_if_risen(ctx: Context) -> Generator[CallTool, dict[str, Any], dict[str, set[str]] | None]:
    """The call graph (`list_services`), or None when the reported endpoint's failures did not rise."""
    listing = yield CallTool("list_services", {})
    calls = {s["name"]: set(s.get("calls", [])) for s in listing.get("services", [])}
    return calls if (yield from reported_rise(ctx)) else None


def random_root(obs: Observation) -> Action:
    """The random-root guess: finds the failing roots below the reported edge from rates and the call
    graph, names one at random, and cites the latest failed requests to the reported endpoint as
    its access log shows them, without opening any."""
    rng = obs.rng()

    def run(ctx: Context) -> Run:
        calls = yield from _graph_if_risen(ctx)
        if calls is None:
            return submit("none")
        report = ctx.reported
        assert report is not None
        roots = yield from _failing_roots(ctx, calls, report.edge)
        if not roots:
            return submit("none")
        failed = yield ctx.search(
            start=ctx.end - timedelta(minutes=10), limit=20, service=report.edge, min_level="ERROR", text=report.text
        )
        cited = tuple(
            dict.fromkeys(f[3] for line in reversed(failed.get("lines", [])) if (f := line_fields(line)) is not None)
        )[:3]
        return (yield from _describe(ctx, rng.choice(roots), evidence=cited))

    return scripted(run)(obs)


def cite_twin(ctx: Context) -> Run:
    """Follows a failed request as the oracle does, but one to another endpoint of the reported edge
    (a concurrent fault's): names the bottom of its path and cites it."""
    calls = yield from _graph_if_risen(ctx)
    if calls is None:
        return submit("none")
    report = ctx.reported
    assert report is not None
    errors = yield ctx.search(start=ctx.end - timedelta(minutes=10), limit=100, service=report.edge, min_level="ERROR")
    others = list(
        dict.fromkeys(
            f[3]
            for line in reversed(errors.get("lines", []))
            if (f := line_fields(line)) is not None
            and " /api/" in f[4]
            and not f[4].startswith(f"{report.method} {report.path}/")
        )
    )
    for trace in others[:3]:
        request = yield ctx.search(limit=200, trace=trace)
        lines = [f for line in request.get("lines", []) if (f := line_fields(line)) is not None]
        crossed = {f[2] for f in lines} - {report.edge}
        deepest = sorted(s for s in crossed if not reachable(calls, s) & crossed)
        if len(deepest) == 1:
            kind = classify([f"t L s i trace=0 {f[4]}" for f in lines if f[2] == deepest[0]]) or "bad_deploy"
            return submit(deepest[0], kind, [trace])
    return submit("none")


def none(ctx: Context) -> Run:
    """Always reports that nothing went wrong."""
    yield from ()  # a script with no queries
    return submit("none")


SHORTCUTS: dict[str, Policy] = {
    "shortcut_grep_catalogue": scripted(grep_catalogue),
    "shortcut_grep_descriptions": grep_descriptions,
    "shortcut_grep_rise": scripted(grep_rise),
    "shortcut_root_wording": scripted(root_wording),
    "shortcut_grep_reach": scripted(grep_reach),
    "shortcut_earliest_error_burst": scripted(earliest_error_burst),
    "shortcut_most_errors": scripted(most_errors),
    "shortcut_biggest_rise": scripted(biggest_rise),
    "shortcut_earliest_anomaly": scripted(earliest_anomaly),
    "shortcut_none": scripted(none),
    "shortcut_random_root": random_root,
    "shortcut_cite_twin": scripted(cite_twin),
    **LEARNED,
}
