"""The fault catalogue: each kind's answer id, the roles it can strike, and the natural log lines
its root, its callers and chronic look-alikes on healthy services write, and what callers that
degrade gracefully write about a failing dependency.

Design rule: no message ever contains a kind's id (`connection_pool_exhaustion`, ...). The ids are
the answer vocabulary; the evidence is in the wording an engineer would recognise ("timeout
acquiring connection from pool (active=50/50)"), so a test can check that the answer never
appears in any tool result.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FAULT_KINDS", "GRACEFUL", "KINDS_BY_ID", "FaultKind", "Line"]

Render = Callable[[random.Random, str, str], str]
"""(rng, service, dep) -> message: `service` logs the line, `dep` is the service it concerns."""


@dataclass(frozen=True)
class Line:
    level: str
    render: Render


@dataclass(frozen=True)
class FaultKind:
    id: str
    """The answer id the agent submits."""
    description: str
    """One line for the prompt's vocabulary."""
    roles: frozenset[str]
    """Roles a root of this kind can have."""
    root: tuple[Line, ...]
    """Lines the failing root writes in the storm; the first one opens it."""
    warning: Line
    """The WARN a root writes, sparsely, before its storm when the incident has a precursor."""
    caller: tuple[Line, ...]
    """Lines a caller writes about the failing service it calls (`dep`), in its own words."""
    echo: tuple[Line, ...]
    """Lines a caller writes when it passes on the dependency's error text (the root's wording)."""
    chronic: tuple[Line, ...]
    """Benign lines in this kind's wording that a healthy service logs all hour (a decoy)."""
    needs_dep_role: str | None = None
    """A root must call a service of this role (e.g. a database for pool exhaustion)."""
    prelude: Line | None = None
    """An INFO line the root writes shortly before the onset (a rollout, a config reload)."""

    @property
    def own(self) -> tuple[Line, ...]:
        """Every anomalous line a root of this kind writes (storm and precursor): what a verbatim
        look-alike copies."""
        return (*self.root, self.warning)


APP = frozenset({"service"})
DATA = frozenset({"database", "queue", "search"})


def _ms(r: random.Random) -> int:
    return r.randrange(3000, 30001)


def _version(r: random.Random) -> str:
    return f"{r.randrange(1, 9)}.{r.randrange(0, 40)}.{r.randrange(0, 20)}"


def _ip(r: random.Random) -> str:
    return f"10.{r.randrange(0, 8)}.{r.randrange(0, 256)}.{r.randrange(2, 255)}"


_OPS = ("POST /charge", "GET /items", "PUT /cart", "POST /checkout", "GET /profile", "POST /reserve")
_FIELDS = ("currency", "amount", "userId", "sku", "region", "items")
_CLASSES = ("OrderMapper", "PriceCalculator", "CartService", "TokenParser", "LedgerWriter")
_DATA_FILES = ("pg_wal/xlogtemp", "segments/00000412.log", "index/_4f.tmp", "snapshots/tmp-8812")
_PROVIDERS = ("stripe", "sendgrid", "twilio", "maps", "taxjar", "shipengine")


def _caller_http(status: str) -> Line:
    return Line("ERROR", lambda r, s, d: f"call to {d} failed: {status} after {_ms(r)}ms")


def _echo_http(status: str, cause: str) -> Line:
    return Line("ERROR", lambda r, s, d: f"call to {d} failed: {status} after {_ms(r)}ms ({d} said: {cause})")


GRACEFUL: tuple[Line, ...] = (
    Line("WARN", lambda r, s, d: f"retrying call to {d} (attempt 2 of 3)"),
    Line("WARN", lambda r, s, d: f"call to {d} failed; served a degraded response from the local copy ({_ms(r)}ms)"),
    Line("INFO", lambda r, s, d: f"call to {d} succeeded on attempt {r.randrange(2, 4)} after {_ms(r)}ms"),
)
"""What a caller that degrades gracefully logs about a failing dependency (it retries, or serves a
local copy): the same words background retries use, no fault wording, and its request succeeds."""

FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind(
        id="connection_pool_exhaustion",
        description="a service ran out of pooled database connections and queues or fails requests",
        roles=APP,
        needs_dep_role="database",
        root=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"timeout acquiring connection from pool {d} after 5000ms "
                    f"(active=50/50, idle=0, waiting={r.randrange(5, 120)})"
                ),
            ),
            Line("WARN", lambda r, s, d: f"connection pool {d} saturated: active=50/50, waiting={r.randrange(5, 120)}"),
            Line("ERROR", lambda r, s, d: f"could not get a connection to {d}: pool has no free connections"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: (
                f"connection pool {d} nearly exhausted: active={r.randrange(44, 50)}/50, waiting={r.randrange(1, 5)}"
            ),
        ),
        caller=(
            _caller_http("503 Service Unavailable"),
            Line("ERROR", lambda r, s, d: f"POST {d}/api timed out after {_ms(r)}ms"),
        ),
        echo=(_echo_http("503 Service Unavailable", "pool has no free connections"),),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"connection pool {d} saturated during bulk import: active=50/50, waiting={r.randrange(1, 6)}"
                ),
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"timeout acquiring connection from pool {d} after 5000ms "
                    f"(active=50/50, idle=0, waiting={r.randrange(1, 6)}); retried and succeeded"
                ),
            ),
        ),
    ),
    FaultKind(
        id="bad_deploy",
        description="a freshly rolled-out version of a service has a code defect",
        roles=APP,
        prelude=Line("INFO", lambda r, s, d: f"rolling update complete: {s} now at version {_version(r)}"),
        root=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"unhandled exception in {r.choice(_OPS)}: TypeError: Cannot read "
                    f"properties of undefined (reading '{r.choice(_FIELDS)}')"
                ),
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"NullPointerException at {r.choice(_CLASSES)}.apply"
                    f"({r.choice(_CLASSES)}.java:{r.randrange(40, 900)})"
                ),
            ),
            Line("ERROR", lambda r, s, d: f"500 Internal Server Error on {r.choice(_OPS)}: unhandled exception"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: f"recovered from unhandled exception in {r.choice(_OPS)}; served a fallback response",
        ),
        caller=(_caller_http("500 Internal Server Error"),),
        echo=(_echo_http("500 Internal Server Error", "unhandled exception: NullPointerException"),),
        chronic=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"handled exception in {r.choice(_OPS)}: NullPointerException at "
                    f"{r.choice(_CLASSES)}.apply({r.choice(_CLASSES)}.java:{r.randrange(40, 900)}); returned 400"
                ),
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"unhandled exception in {r.choice(_OPS)} from a malformed client payload: "
                    f"TypeError: Cannot read properties of undefined (reading '{r.choice(_FIELDS)}'); returned 400"
                ),
            ),
        ),
    ),
    FaultKind(
        id="oom_restart_loop",
        description="a service keeps being killed for exceeding its memory limit and restarting",
        roles=APP,
        root=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"container terminated: OOMKilled (memory limit {r.choice((256, 512, 1024))}Mi, exit code 137)"
                ),
            ),
            Line("WARN", lambda r, s, d: f"back-off restarting failed container (restart count {r.randrange(2, 40)})"),
            Line("WARN", lambda r, s, d: f"heap usage at {r.randrange(88, 100)}% of limit; GC cannot reclaim memory"),
        ),
        warning=Line("WARN", lambda r, s, d: f"heap usage at {r.randrange(78, 95)}% of limit after full GC"),
        caller=(
            Line("ERROR", lambda r, s, d: f"call to {d} failed: connection refused ({_ip(r)}:8080)"),
            Line("ERROR", lambda r, s, d: f"upstream {d} reset the connection mid-request"),
        ),
        echo=(
            Line(
                "ERROR",
                lambda r, s, d: f"call to {d} failed: connection refused; {d} pod is restarting after OOMKilled",
            ),
        ),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: "sidecar log-shipper container terminated: OOMKilled (memory limit 64Mi); restarted",
            ),
            Line("WARN", lambda r, s, d: f"heap usage at {r.randrange(70, 95)}% of limit after full GC"),
        ),
    ),
    FaultKind(
        id="certificate_expiry",
        description="a service's TLS serving certificate expired, so handshakes with it fail",
        roles=APP | DATA,
        root=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"TLS handshake error from {_ip(r)}: remote error: tls: bad certificate "
                    "(serving certificate expired)"
                ),
            ),
            Line("WARN", lambda r, s, d: f"serving certificate for {s}.internal is past its notAfter date"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: (
                f"serving certificate for {s}.internal expires in {r.randrange(5, 300)}s and renewal failed"
            ),
        ),
        caller=(
            Line("ERROR", lambda r, s, d: f"call to {d} failed: connection closed during handshake after {_ms(r)}ms"),
        ),
        echo=(
            Line(
                "ERROR",
                lambda r, s, d: f"TLS handshake with {d}:443 failed: x509: certificate has expired or is not yet valid",
            ),
        ),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: f"certificate for {s}.internal expires in {r.randrange(3, 9)} days; renewal scheduled",
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"TLS handshake error from {_ip(r)}: remote error: tls: bad certificate "
                    "(client certificate expired)"
                ),
            ),
        ),
    ),
    FaultKind(
        id="disk_full",
        description="a service or data store ran out of disk space and cannot write",
        roles=DATA,
        root=(
            Line(
                "ERROR", lambda r, s, d: f'could not write to file "{r.choice(_DATA_FILES)}": No space left on device'
            ),
            Line(
                "WARN",
                lambda r, s, d: (
                    f"disk usage on /var/lib/data at {r.randrange(97, 101)}% ({r.randrange(0, 40)} MiB free)"
                ),
            ),
            Line("ERROR", lambda r, s, d: "failed to append to write-ahead log: No space left on device"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: f"disk usage on /var/lib/data at {r.randrange(95, 97)}% ({r.randrange(40, 400)} MiB free)",
        ),
        caller=(
            Line("ERROR", lambda r, s, d: f"write to {d} failed: the server rejected the write (storage error)"),
            _caller_http("503 Service Unavailable"),
        ),
        echo=(Line("ERROR", lambda r, s, d: f"write to {d} failed: No space left on device"),),
        chronic=(
            Line("WARN", lambda r, s, d: f"disk usage on /var/log at {r.randrange(80, 97)}% (below critical 97%)"),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f'could not write to file "/tmp/export-{r.randrange(100, 999)}.csv": '
                    "No space left on device (scratch volume); job will retry"
                ),
            ),
        ),
    ),
    FaultKind(
        id="dns_failure",
        description="a service can no longer resolve the hostnames of the services it calls",
        roles=APP,
        root=(
            Line("ERROR", lambda r, s, d: f"dial tcp: lookup {d}.internal on 10.0.0.10:53: no such host"),
            Line("ERROR", lambda r, s, d: f"getaddrinfo EAI_AGAIN {d}.internal (temporary failure in name resolution)"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: f"DNS lookup of {d}.internal took {r.randrange(2000, 5000)}ms; resolver timed out once",
        ),
        caller=(_caller_http("502 Bad Gateway"),),
        echo=(_echo_http("502 Bad Gateway", "lookup failed: no such host"),),
        chronic=(
            Line("WARN", lambda r, s, d: "DNS lookup of metrics-push.example.com timed out; retry succeeded"),
            Line(
                "ERROR",
                lambda r, s, d: (
                    "dial tcp: lookup telemetry.example.com on 10.0.0.10:53: no such host (optional exporter disabled)"
                ),
            ),
        ),
    ),
    FaultKind(
        id="config_error",
        description="a service loaded an invalid configuration and rejects work",
        roles=APP,
        prelude=Line(
            "INFO", lambda r, s, d: f"configuration reloaded from /etc/{s}/app.yaml (revision {r.randrange(100, 999)})"
        ),
        root=(
            Line(
                "ERROR",
                lambda r, s, d: f'invalid configuration: {s}.retry.max_attempts must be a positive integer, got "ten"',
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"rejecting request: feature 'checkout-v2' misconfigured (missing key {s}.limits.per_user)"
                ),
            ),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: f'invalid configuration value {s}.retry.backoff_ms="fast"; keeping the previous value',
        ),
        caller=(_caller_http("500 Internal Server Error"),),
        echo=(_echo_http("500 Internal Server Error", "feature 'checkout-v2' misconfigured"),),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"invalid configuration for optional plugin 'audit-export': key 'batch_{r.randrange(1, 9)}' ignored"
                ),
            ),
        ),
    ),
    FaultKind(
        id="rate_limited",
        description="an external provider a service depends on is throttling its requests",
        roles=APP,
        root=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"provider {r.choice(_PROVIDERS)} responded 429 Too Many Requests "
                    f"(retry-after {r.randrange(5, 60)}s)"
                ),
            ),
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"request quota exceeded for provider {r.choice(_PROVIDERS)} ({r.choice((100, 300, 600))}/min)"
                ),
            ),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: (
                f"provider {r.choice(_PROVIDERS)} responded 429 Too Many Requests (retry-after 1s); retrying"
            ),
        ),
        caller=(_caller_http("503 Service Unavailable"),),
        echo=(_echo_http("503 Service Unavailable", "provider quota exceeded"),),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"provider {r.choice(_PROVIDERS)} responded 429 Too Many Requests (retry-after 2s); request queued"
                ),
            ),
        ),
    ),
    FaultKind(
        id="cache_stampede",
        description="hot cache entries expired at once and a flood of concurrent misses overloads the cache",
        roles=frozenset({"cache"}),
        root=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"hot key product:{r.randrange(1000, 9999)} expired; {r.randrange(200, 5000)} concurrent misses"
                ),
            ),
            Line("WARN", lambda r, s, d: f"keyspace miss ratio {r.randrange(60, 99)}% over the last 10s"),
            Line("ERROR", lambda r, s, d: f"client output buffer overflow; closing {r.randrange(20, 400)} clients"),
        ),
        warning=Line("WARN", lambda r, s, d: f"keyspace miss ratio {r.randrange(40, 80)}% over the last 10s"),
        caller=(
            Line("WARN", lambda r, s, d: f"lookup in {d} missed; recomputing from the database ({_ms(r)}ms)"),
            Line("ERROR", lambda r, s, d: f"request timed out waiting on {d} after {_ms(r)}ms"),
        ),
        echo=(
            Line(
                "ERROR",
                lambda r, s, d: (
                    f"request timed out waiting on {d} after {_ms(r)}ms (hot key "
                    f"product:{r.randrange(1000, 9999)} expired)"
                ),
            ),
        ),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"hot key session:{r.randrange(1000, 9999)} expired; "
                    f"{r.randrange(5, 40)} concurrent misses coalesced"
                ),
            ),
            Line("WARN", lambda r, s, d: f"keyspace miss ratio {r.randrange(30, 80)}% over the last 10s"),
        ),
    ),
    FaultKind(
        id="clock_skew",
        description="a service's system clock drifted, so the tokens and signatures it issues are rejected",
        roles=APP,
        root=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"system clock offset {r.randrange(3, 90)}.{r.randrange(10)}s from NTP "
                    "source exceeds tolerance 0.5s"
                ),
            ),
            Line("ERROR", lambda r, s, d: "NTP synchronisation lost: no reachable time source"),
        ),
        warning=Line(
            "WARN",
            lambda r, s, d: (
                f"system clock offset 1.{r.randrange(10)}s from NTP source exceeds tolerance 0.5s; stepping"
            ),
        ),
        caller=(
            Line("ERROR", lambda r, s, d: f"token from {d} rejected: issued-at time is in the future"),
            Line("ERROR", lambda r, s, d: f"request signed by {d} rejected: timestamp outside the allowed window"),
        ),
        echo=(
            Line(
                "ERROR",
                lambda r, s, d: f"token from {d} rejected: issuer clock offset from NTP exceeds the allowed skew",
            ),
        ),
        chronic=(
            Line(
                "WARN",
                lambda r, s, d: (
                    f"system clock offset 0.{r.randrange(6, 10)}s from NTP source exceeds tolerance 0.5s; slewing"
                ),
            ),
        ),
    ),
)

KINDS_BY_ID: dict[str, FaultKind] = {kind.id: kind for kind in FAULT_KINDS}
