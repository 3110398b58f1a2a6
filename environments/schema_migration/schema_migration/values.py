"""Pools of realistic and awkward values (unicode, stray spaces, look-alike duplicates) for row generators."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

__all__ = [
    "CITIES",
    "CJK",
    "COUNTRIES",
    "FIRST",
    "LAST",
    "REGIONS",
    "STREETS",
    "date",
    "email",
    "pad",
    "person",
    "pick",
    "randrange",
    "timestamp",
    "word",
]

T = TypeVar("T")

FIRST = (
    "Ann", "Bob", "Chloé", "Dmitri", "Émile", "Fatima", "Günter", "Hiro", "Ingrid", "José",
    "Kwame", "Lars", "Mei", "Nadia", "Óscar", "Priya", "Quinn", "Rafał", "Søren", "Tomás",
    "Uma", "Văn", "Wei", "Xóchitl", "Yusuf", "Zoë", "Jean-Luc", "D'Arcy", "Mary-Kate", "Ali",
)  # fmt: skip
LAST = (
    "Lee", "O'Brien", "García", "Müller", "Nakamura", "Smith", "Ødegård", "Nguyễn", "Kowalski",
    "Dubois", "Papadopoulos", "MacLeod", "Al-Farsi", "Ivanova", "Zhang", "Okafor", "Haugen",
    "Łukasiewicz", "Brown", "Rossi", "Sato", "Kim", "Novák", "Jones",
)  # fmt: skip
MULTI_LAST = ("van der Berg", "De la Cruz", "Da Silva", "Lloyd Webber")
CJK = ("李小龍", "山田太郎", "김민수")
CITIES = (
    "Zürich", "São Paulo", "Kraków", "Montréal", "Reykjavík", "Malmö", "Oslo", "Lagos", "Austin",
    "Düsseldorf", "Córdoba", "Tromsø", "New York", "Ho Chi Minh City", "Cork", "Perth",
)  # fmt: skip
STREETS = (
    "1 Main St", "22 Rue de l'Église", "5 Ørstedsvej", "Flat 3, 9 High Road", "77 Calle Mayor",
    "400 Elm Ave", "12 Königstraße", "8 Via Roma", "3/14 Pier Rd", "PO Box 12",
)  # fmt: skip
REGIONS = ("CA", "TX", "Bavaria", "Québec", "Ontario", "Lombardy", "NSW", "Kansai")
COUNTRIES = ("NO", "DE", "BR", "PL", "CA", "US", "JP", "IE", "AU", "FR")
WORDS = (
    "alpha", "bravo", "café", "delta", "echo", "façade", "golf", "hotel", "naïve", "kilo",
    "lima", "mike", "oscar", "papa", "rómeo", "sierra", "tango", "ümlaut", "victor", "zulu",
)  # fmt: skip
DOMAINS = ("example.com", "mail.test", "post.example.org", "univ.example.edu")


DATES = tuple(f"{y:04d}-{m:02d}-{d:02d}" for y in range(2019, 2026) for m in range(1, 13) for d in range(1, 29))
CLOCK = tuple(f"{h:02d}:{m:02d}" for h in range(24) for m in range(60))
SECONDS = tuple(f"{s:02d}" for s in range(60))


def pick(rng: random.Random, seq: Sequence[T]) -> T:
    """`rng.choice(seq)`, several times faster (one `random()` call): generators draw millions."""
    return seq[int(rng.random() * len(seq))]


def randrange(rng: random.Random, start: int, stop: int | None = None) -> int:
    """`rng.randrange(start, stop)` via one `random()` call (ranges here stay far below 2**53)."""
    if stop is None:
        start, stop = 0, start
    return start + int(rng.random() * (stop - start))


def pad(rng: random.Random, value: str, rate: float) -> str:
    """With probability `rate`, add stray spaces before and/or after `value`."""
    if rng.random() >= rate:
        return value
    return " " * pick(rng, (0, 1, 2)) + value + " " * pick(rng, (1, 2, 3))


def person(rng: random.Random) -> tuple[str, str]:
    """(first, last) with occasional two-word surnames."""
    last = pick(rng, MULTI_LAST) if rng.random() < 0.1 else pick(rng, LAST)
    return pick(rng, FIRST), last


def word(rng: random.Random) -> str:
    return pick(rng, WORDS)


def email(rng: random.Random, first: str, last: str) -> str:
    local = "".join(ch for ch in f"{first}.{last}".lower() if ch.isascii() and (ch.isalnum() or ch == "."))
    return f"{local or 'user'}{randrange(rng, 100)}@{pick(rng, DOMAINS)}"


def date(rng: random.Random) -> str:
    return pick(rng, DATES)


def timestamp(rng: random.Random) -> str:
    return f"{pick(rng, DATES)} {pick(rng, CLOCK)}:{pick(rng, SECONDS)}"
