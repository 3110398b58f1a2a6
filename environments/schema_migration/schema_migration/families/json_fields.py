"""Extract fields of a JSON text column into typed columns, tolerating malformed and mistyped payloads."""

from __future__ import annotations

import json
import random
from typing import Any

from schema_migration import values
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, rebuild
from schema_migration.schema import Column, Index, Row, Rows, Schema, Table

__all__ = ["FAMILY", "JsonFields"]

FIELDS = (
    ("kind", "$.type", "TEXT"),
    ("user_id", "$.user.id", "INTEGER"),
    ("amount", "$.amount", "REAL"),
    ("country", "$.geo.country", "TEXT"),
    ("session_no", "$.session", "INTEGER"),
)
MISSING = object()
ENCODERS = tuple(
    json.JSONEncoder(ensure_ascii=ascii_only, separators=separators)
    for ascii_only in (True, False)
    for separators in ((",", ":"), (", ", ": "))
)
DIGITS = frozenset("0123456789")
INTEGER_EDGES = (
    MISSING, None, "42", " 0042 ", "4 2", "x1", 5.0, True, -3, "", "\t7", 10**12,
    " 1909 ", "9", "   ", "1/2", "12:30",
)  # fmt: skip
"""Odd values for an INTEGER field: every digit 0-9 occurs in a numeric string (so a narrowed class
[^0-8] or [^1-9] shows), as do '/' and ':' (the characters either side of 0-9), spaces only, and
spaces on both sides."""


def _get(obj: object, path: str) -> object:
    for key in path[2:].split("."):
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


class JsonFields(Family):
    name = "extract_json"
    title = "extract JSON fields into columns"

    def draw(self, rng: random.Random) -> Params:
        chosen = sorted(rng.sample(range(len(FIELDS)), rng.randint(2, 3)))
        fields = [list(FIELDS[k]) for k in chosen]
        integer = [f[0] for f in fields if f[2] == "INTEGER"]
        return {
            "table": pick(rng, ("events", "webhooks", "audit_events")),
            "fields": fields,
            "keep_payload": rng.random() < 0.5,
            "indexed": integer[0] if integer else None,
        }

    def schemas(self, p: Params) -> tuple[Schema, Schema]:
        t = p["table"]
        head = (Column("id", "INTEGER", primary_key=True), Column("received_at", "TEXT", notnull=True))
        payload = (Column("payload", "TEXT"),)
        source = Table(t, head + payload)
        extracted = tuple(Column(name, kind) for name, _, kind in p["fields"])
        target = Table(t, head + (payload if p["keep_payload"] else ()) + extracted)
        index = (Index(f"idx_{t}_{p['indexed']}", t, (p["indexed"],)),) if p["indexed"] else ()
        return Schema((source,)), Schema((target,), index)

    def rules(self, p: Params) -> str:
        t = p["table"]
        keep = "Keep `payload` (unchanged) and add" if p["keep_payload"] else "Drop `payload` and add"
        cols = "; ".join(f"`{n}` {k} from path {path}" for n, path, k in p["fields"])
        index = f" Index `{p['indexed']}`." if p["indexed"] else ""
        return (
            f"{keep}, to `{t}` these columns: {cols}.{index} If `payload` is NULL, "
            "is not valid JSON (RFC 8259, as SQLite's json_valid() decides), or is valid JSON but not an object, "
            "every new column is NULL. Otherwise, for each field, follow the path ($.a.b means key b inside the "
            "object at key a; a missing key or a non-object on the way gives NULL) and take: for a TEXT column, "
            "the value if it is a JSON string (unchanged, not trimmed), else NULL; for an INTEGER column, the "
            "value if it is a JSON integer, or, if it is a JSON string that after removing leading and trailing "
            "spaces (U+0020) is one or more ASCII digits, that number (leading zeros dropped), else NULL "
            "(true/false, reals like 5.0, other strings give NULL); for a REAL column, the value if it is a JSON "
            "number (integer or real) stored as REAL, else NULL (a numeric string gives NULL). Keep every row."
        )

    def _value(self, rng: random.Random, kind: str, hard: bool) -> object:
        odd = rng.random() < (0.35 if hard else 0.2)
        if kind == "TEXT":
            if odd:
                return pick(rng, (MISSING, None, 5, "", " padded ", True, ["x"], "naïve"))
            return pick(rng, ("click", "view", "purchase", "refund", "login", *values.COUNTRIES))
        if kind == "INTEGER":
            if odd:
                return pick(rng, INTEGER_EDGES)
            return randrange(rng, 1, 100_000)
        if odd:
            return pick(rng, (MISSING, None, "12.5", True, 0, -0.5, 1e3, 123456.78))
        return round(rng.uniform(0, 5000), 2)

    def _payload(self, p: Params, rng: random.Random, hard: bool) -> str | None:
        if rng.random() < (0.2 if hard else 0.1):
            return pick(rng, (None, "", "not json", '{"type": "click"', "[1, 2]", "null", "42", '"text"', "{'type': 'x'}"))
        obj: dict[str, Any] = {}
        for _, path, kind in p["fields"]:
            value = self._value(rng, kind, hard)
            if value is MISSING:
                continue
            keys = path[2:].split(".")
            node = obj
            for key in keys[:-1]:
                if not isinstance(node.get(key), dict):
                    node[key] = {} if rng.random() < 0.95 else "not-an-object"
                node = node[key]
                if not isinstance(node, dict):
                    break
            else:
                node[keys[-1]] = value
        if rng.random() < 0.3:
            obj["extra"] = {"tags": [values.word(rng)], "n": randrange(rng, 10)}
        text = pick(rng, ENCODERS).encode(obj)
        return values.pad(rng, text, 0.1)

    def rows(self, p: Params, rng: random.Random, n: int, hard: bool) -> dict[str, list[Row]]:
        out = [(i, values.timestamp(rng), self._payload(p, rng, hard)) for i in ids(rng, n, 10_000 if hard else 1)]
        return {p["table"]: out}

    def extract(self, p: Params, payload: str | None) -> list[object]:
        try:
            obj = json.loads(payload) if payload is not None else None
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            return [None] * len(p["fields"])
        out: list[object] = []
        for _, path, kind in p["fields"]:
            v = _get(obj, path)
            if kind == "TEXT":
                out.append(v if isinstance(v, str) else None)
            elif kind == "INTEGER":
                if isinstance(v, int) and not isinstance(v, bool):
                    out.append(v)
                elif isinstance(v, str) and v.strip(" ") and set(v.strip(" ")) <= DIGITS:
                    out.append(int(v.strip(" ")))
                else:
                    out.append(None)
            else:
                out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
        return out

    def transform(self, p: Params, rows: Rows) -> dict[str, list[Row]]:
        keep = p["keep_payload"]
        return {
            p["table"]: [
                (i, at, *((payload,) if keep else ()), *self.extract(p, payload)) for i, at, payload in rows[p["table"]]
            ]
        }

    def migration(self, p: Params) -> str:
        exprs = {}
        for name, path, kind in p["fields"]:
            got = f"json_extract(payload, '{path}')"
            typ = f"json_type(payload, '{path}')"
            if kind == "TEXT":
                value = f"CASE WHEN {typ} = 'text' THEN {got} END"
            elif kind == "INTEGER":
                value = (
                    f"CASE {typ} WHEN 'integer' THEN {got} WHEN 'text' THEN CASE WHEN trim({got}) <> '' "
                    f"AND trim({got}) NOT GLOB '*[^0-9]*' THEN CAST(trim({got}) AS INTEGER) END END"
                )
            else:
                value = f"CASE WHEN {typ} IN ('integer', 'real') THEN CAST({got} AS REAL) END"
            exprs[name] = f"CASE WHEN payload_kind = 'object' THEN {value} END"
        _, target = self.schemas(p)
        source = f"(SELECT *, CASE WHEN json_valid(payload) THEN json_type(payload) END AS payload_kind FROM {p['table']}) AS src"
        return rebuild(target.tables[0], exprs, source, target.indexes)

    def examples(self, p: Params) -> dict[str, list[Row]]:
        payloads = [
            '{"type": "click", "user": {"id": 7}, "amount": 12.5, "geo": {"country": "NO"}, "session": "0042"}',
            '{"type": 5, "user": {"id": "x1"}, "amount": "12.5", "geo": "NO", "session": true}',
            '{"user": {"id": 5.0}, "amount": 3}',
            '{"type": "view"',
            "[1, 2]",
            None,
        ]
        return {p["table"]: [(k + 1, "2024-01-01 00:00:00", v) for k, v in enumerate(payloads)]}


FAMILY = JsonFields()
