"""A seeded service topology: layered services whose calls only point to lower layers (a DAG).

Layers: 0 edge (gateways), 1 request services and queue workers, 2 core services, 3 data stores.
A core service may also call a core service ranked before it, which gives chains of depth 3-4.
Every service below the edge has at least one caller, so a fault anywhere can propagate upward.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["MIN_SERVICES", "MAX_SERVICES", "Service", "build_topology", "callers_of"]


@dataclass(frozen=True)
class Service:
    name: str
    role: str
    """edge | service | worker | database | cache | queue | search"""
    layer: int
    instances: tuple[str, ...]
    calls: tuple[str, ...]
    """Services this one calls (its dependencies)."""


@dataclass(frozen=True)
class _Spec:
    name: str
    role: str
    layer: int


_CORE = (
    _Spec("api-gateway", "edge", 0),
    _Spec("carts", "service", 1),
    _Spec("order-worker", "worker", 1),
    _Spec("auth", "service", 2),
    _Spec("payments", "service", 2),
    _Spec("orders-db", "database", 3),
    _Spec("redis-cache", "cache", 3),
    _Spec("events-queue", "queue", 3),
)
_POOL = (
    *(_Spec(n, "edge", 0) for n in ("web-frontend", "mobile-bff", "admin-api", "partner-api")),
    *(
        _Spec(n, "service", 1)
        for n in (
            "checkout",
            "orders",
            "search",
            "recommendations",
            "shipping",
            "notifications",
            "reviews",
            "wishlist",
            "returns",
        )
    ),
    *(
        _Spec(n, "worker", 1)
        for n in ("email-worker", "index-worker", "report-worker", "billing-worker", "webhook-worker")
    ),
    *(
        _Spec(n, "service", 2)
        for n in (
            "catalog",
            "inventory",
            "pricing",
            "users",
            "ledger",
            "fraud-check",
            "promotions",
            "loyalty",
            "tax",
            "geo",
            "media",
            "sessions",
            "feature-flags",
        )
    ),
    _Spec("users-db", "database", 3),
    _Spec("catalog-db", "database", 3),
    _Spec("ledger-db", "database", 3),
    _Spec("session-cache", "cache", 3),
    _Spec("search-index", "search", 3),
    _Spec("audit-queue", "queue", 3),
)
MIN_SERVICES = len(_CORE)
MAX_SERVICES = 40
_POD_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def build_topology(rng: random.Random, n: int) -> tuple[Service, ...]:
    """`n` services (MIN_SERVICES..MAX_SERVICES), the core eight always included."""
    if not MIN_SERVICES <= n <= MAX_SERVICES:
        raise ValueError(f"services must be between {MIN_SERVICES} and {MAX_SERVICES}, got {n}")
    specs = sorted((*_CORE, *rng.sample(_POOL, n - len(_CORE))), key=lambda s: (s.layer, s.name))
    core = [s.name for s in specs if s.layer == 2]
    request = [s.name for s in specs if s.role == "service" and s.layer == 1]
    data = [s for s in specs if s.layer == 3]
    stores = [s.name for s in data if s.role != "queue"]
    queues = [s.name for s in data if s.role == "queue"]
    calls: dict[str, list[str]] = {}
    for spec in specs:
        if spec.role == "edge":
            picks = ["auth", *_some(rng, [c for c in request + core if c != "auth"], 2, 4)]
        elif spec.role == "worker":
            picks = [rng.choice(queues), *_some(rng, core, 1, 2), *_some(rng, stores, 0, 1)]
        elif spec.layer == 1:
            picks = [*_some(rng, core, 1, 3), *_some(rng, stores + queues, 1, 2)]
        elif spec.layer == 2:
            earlier = core[: core.index(spec.name)]
            picks = [*_some(rng, stores, 1, 2), *_some(rng, earlier, 0, 1)]
        else:
            picks = []
        calls[spec.name] = picks
    _adopt_orphans(rng, specs, calls)
    return tuple(
        Service(spec.name, spec.role, spec.layer, _instances(rng, spec), tuple(sorted(set(calls[spec.name]))))
        for spec in specs
    )


def callers_of(services: tuple[Service, ...], name: str) -> tuple[str, ...]:
    return tuple(s.name for s in services if name in s.calls)


def _some(rng: random.Random, pool: list[str], low: int, high: int) -> list[str]:
    return rng.sample(pool, min(len(pool), rng.randint(low, high)))


def _adopt_orphans(rng: random.Random, specs: list[_Spec], calls: dict[str, list[str]]) -> None:
    """Give every non-edge, non-worker service a caller from a higher layer."""
    called = {c for picks in calls.values() for c in picks}
    for spec in specs:
        if spec.role in ("edge", "worker") or spec.name in called:
            continue
        if spec.layer == 3:
            eligible = [s.name for s in specs if s.role in ("service", "worker")]
        else:
            eligible = [s.name for s in specs if s.role == "edge" or (s.role == "service" and s.layer < spec.layer)]
        calls[rng.choice(eligible)].append(spec.name)
        called.add(spec.name)


def _instances(rng: random.Random, spec: _Spec) -> tuple[str, ...]:
    if spec.layer == 3:
        return tuple(f"{spec.name}-{i}" for i in range(rng.randint(1, 3)))
    count = rng.randint(2, 4) if spec.role == "edge" else rng.randint(1, 4)
    replica_set = "".join(rng.choice(_POD_CHARS) for _ in range(9))
    return tuple(f"{spec.name}-{replica_set}-{''.join(rng.choice(_POD_CHARS) for _ in range(5))}" for _ in range(count))
