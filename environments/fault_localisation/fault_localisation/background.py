"""Background traffic: per-role message templates, each service's level mix and traffic weight,
and periodic jobs. Nothing here mentions a fault's evidence wording (see `catalogue`)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fault_localisation.topology import Service

__all__ = ["ENDPOINTS", "JOBS", "Access", "Job", "Profile", "Template", "access_line", "profile", "request_line"]

Template = Callable[[random.Random, Service], str]


@dataclass(frozen=True)
class Access:
    """An edge's request in its access log: a DEBUG line when it is received, its access line
    (endpoint, status, duration) when it is answered `low_ms`..`high_ms` later."""

    statuses: tuple[int, ...]
    low_ms: int
    high_ms: int


ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("POST", "/api/v1/checkout"),
    ("GET", "/api/v1/products"),
    ("PUT", "/api/v1/carts"),
    ("GET", "/api/v1/orders"),
    ("POST", "/api/v1/payments"),
    ("GET", "/api/v1/search"),
    ("POST", "/api/v1/reviews"),
    ("GET", "/api/v1/profile"),
    ("DELETE", "/api/v1/wishlist"),
    ("POST", "/api/v1/returns"),
)
"""The routes every edge service serves (method, route): users report failures by endpoint, and an
edge's access log names the endpoint, never the upstream that failed it."""
_STATUS = (200, 200, 200, 200, 200, 201, 204, 304, 404, 400)
_TABLES = ("orders", "order_items", "users", "sessions", "products", "payments", "ledger_entries")
_TOPICS = ("orders", "payments", "emails", "audit", "inventory")


def _dep(r: random.Random, s: Service) -> str:
    return r.choice(s.calls) if s.calls else "upstream"


def _path(r: random.Random) -> str:
    return f"{r.choice(ENDPOINTS)[1]}/{r.randrange(1, 999_999)}"


def _ms(r: random.Random, low: int = 2, high: int = 120) -> int:
    return r.randrange(low, high)


def request_line(endpoint: tuple[str, str], request: int) -> str:
    """An edge's line when it receives a request: `received POST /api/v1/checkout/48121`."""
    method, route = endpoint
    return f"received {method} {route}/{request}"


def access_line(endpoint: tuple[str, str], request: int, status: int, ms: int) -> str:
    """An edge's access-log line when it answers a request: `POST /api/v1/checkout/48121 502 5013ms`."""
    method, route = endpoint
    return f"{method} {route}/{request} {status} {ms}ms"


_EDGE: dict[str, tuple[Template | Access, ...]] = {
    "DEBUG": (lambda r, s: f"route {_path(r)} -> {_dep(r, s)}",),
    "INFO": (Access(_STATUS, 2, 120), Access(_STATUS, 10, 300)),
    "WARN": (
        lambda r, s: f"slow upstream response from {_dep(r, s)}: {_ms(r, 1000, 2500)}ms (threshold 1000ms)",
        lambda r, s: f"client closed connection before response (499) on {_path(r)}",
    ),
    "ERROR": (
        lambda r, s: f"upstream {_dep(r, s)} returned 500 for {_path(r)}",
        Access((500, 502, 503, 504), 20, 5000),
    ),
}
_SERVICE: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"query {r.choice(_TABLES)} rows={r.randrange(0, 200)} took {_ms(r, 1, 30)}ms",),
    "INFO": (
        lambda r, s: f"handled request for {_dep(r, s)}-backed resource in {_ms(r)}ms",
        lambda r, s: f"published event {r.choice(_TOPICS)}.updated id={r.randrange(10**6)}",
        lambda r, s: f"request completed user={r.randrange(10**6)} status=ok {_ms(r)}ms",
    ),
    "WARN": (
        lambda r, s: f"slow query on {r.choice(_TABLES)}: {_ms(r, 800, 4000)}ms",
        lambda r, s: f"retrying call to {_dep(r, s)} (attempt 2 of 3)",
        lambda r, s: f"deprecated field 'legacy_id' sent by client {r.randrange(100, 999)}",
    ),
    "ERROR": (lambda r, s: "request validation failed: field 'email' is required",),
}
_DATABASE: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"parse <unnamed>: SELECT * FROM {r.choice(_TABLES)} WHERE id = $1",),
    "INFO": (
        lambda r, s: f"connection authorized: user=app database={s.name.removesuffix('-db')}",
        lambda r, s: f"duration: {_ms(r, 1, 90)}.{r.randrange(10)} ms  statement: SELECT FROM {r.choice(_TABLES)}",
        lambda r, s: f'automatic vacuum of table "{r.choice(_TABLES)}": index scans: 1',
    ),
    "WARN": (lambda r, s: f"long-running query ({r.randrange(5, 60)}s) from client {r.randrange(2, 250)}",),
    "ERROR": (lambda r, s: 'duplicate key value violates unique constraint "orders_pkey"',),
}
_CACHE: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"client 10.1.{r.randrange(256)}.{r.randrange(256)} GET session:{r.randrange(10**6)}",),
    "INFO": (
        lambda r, s: f"Accepted 10.1.{r.randrange(256)}.{r.randrange(256)}:{r.randrange(30000, 60000)}",
        lambda r, s: f"{r.randrange(100, 9000)} changes in 60 seconds. Saving...",
    ),
    "WARN": (lambda r, s: f"slowlog: KEYS took {_ms(r, 20, 300)}ms",),
    "ERROR": (lambda r, s: "Error accepting a client connection: Connection reset by peer",),
}
_QUEUE: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"fetch request from consumer {r.randrange(1, 40)} served",),
    "INFO": (
        lambda r, s: (
            f"committed offsets for group {r.choice(_TOPICS)}-consumers on {r.choice(_TOPICS)}-{r.randrange(12)}"
        ),
        lambda r, s: f"rolled new log segment for {r.choice(_TOPICS)}-{r.randrange(12)}",
    ),
    "WARN": (lambda r, s: f"consumer group {r.choice(_TOPICS)}-consumers lag is {r.randrange(100, 5000)} messages",),
    "ERROR": (lambda r, s: f"failed to send metadata request to broker {r.randrange(1, 4)}; will retry",),
}
_SEARCH: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"query parsed in {r.randrange(50, 900)}us",),
    "INFO": (
        lambda r, s: f"indexed {r.randrange(1, 500)} documents into products-v{r.randrange(3, 6)} in {_ms(r)}ms",
        lambda r, s: f"[gc][young] collection took {_ms(r, 5, 60)}ms",
    ),
    "WARN": (lambda r, s: f"[gc][old] collection took {_ms(r, 300, 1500)}ms",),
    "ERROR": (lambda r, s: "failed to execute search request: parse exception in query",),
}
_WORKER: dict[str, tuple[Template, ...]] = {
    "DEBUG": (lambda r, s: f"polled {r.randrange(0, 50)} records",),
    "INFO": (
        lambda r, s: f"processed message offset={r.randrange(10**7)} topic={r.choice(_TOPICS)} in {_ms(r)}ms",
        lambda r, s: f"job {r.randrange(10**5)} completed",
    ),
    "WARN": (lambda r, s: f"message offset={r.randrange(10**7)} redelivered (attempt 2)",),
    "ERROR": (lambda r, s: f"message offset={r.randrange(10**7)} moved to dead-letter queue after 5 attempts",),
}
_TEMPLATES: dict[str, Mapping[str, tuple[Template | Access, ...]]] = {
    "edge": _EDGE,
    "service": _SERVICE,
    "worker": _WORKER,
    "database": _DATABASE,
    "cache": _CACHE,
    "queue": _QUEUE,
    "search": _SEARCH,
}
LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
_MIX = (0.06, 0.91, 0.025, 0.005)
_NOISY_MIX = (0.03, 0.66, 0.24, 0.07)


@dataclass(frozen=True)
class Profile:
    """One service's background behaviour."""

    service: Service
    weight: float
    """Share of background traffic, relative to the other services."""
    level_cum: tuple[float, ...]
    """Cumulative probabilities over LEVELS."""
    templates: Mapping[str, tuple[Template | Access, ...]]

    @property
    def access_share(self) -> float:
        """The chance that one of its background draws is a request in the access log (two lines)."""
        low = 0.0
        share = 0.0
        for level, high in zip(LEVELS, self.level_cum):
            options = self.templates[level]
            share += (high - low) / self.level_cum[-1] * sum(isinstance(o, Access) for o in options) / len(options)
            low = high
        return share


def profile(rng: random.Random, service: Service, noisy: bool) -> Profile:
    weight = {"edge": 3.0, "database": 1.6, "cache": 1.2, "queue": 0.8, "search": 0.6}.get(service.role)
    if weight is None:
        weight = rng.uniform(0.4, 0.9) if service.role == "worker" else rng.uniform(0.6, 1.6)
    mix = _NOISY_MIX if noisy else _MIX
    cum = tuple(sum(mix[: i + 1]) for i in range(len(mix)))
    return Profile(service, weight, cum, _TEMPLATES[service.role])


@dataclass(frozen=True)
class Job:
    """A periodic job: a start line and a finish line every `period_min` minutes."""

    name: str
    period_min: int
    level: str = "INFO"


JOBS: dict[str, tuple[Job, ...]] = {
    "edge": (Job("refresh route table", 1), Job("publish health summary", 5)),
    "service": (
        Job("refresh feature flags", 1),
        Job("flush metrics", 1),
        Job("rotate access log", 15),
        Job("reconcile pending records", 10),
        Job("warm lookup tables", 5),
    ),
    "worker": (Job("scan for stuck jobs", 5), Job("report throughput", 1)),
    "database": (Job("checkpoint", 5), Job("backup to object storage", 30)),
    "cache": (Job("background save", 5), Job("active expire cycle", 1)),
    "queue": (Job("log retention check", 5), Job("controller heartbeat", 1)),
    "search": (Job("refresh index", 1), Job("merge segments", 10)),
}
