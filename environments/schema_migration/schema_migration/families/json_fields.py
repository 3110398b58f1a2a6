"""Extract fields of a JSON text column into typed columns, tolerating malformed and mistyped payloads."""

from __future__ import annotations

import json
import random
from typing import Any

from schema_migration import values
from schema_migration.cases import Fresh, Rule, ValueClass
from schema_migration.values import pick, randrange
from schema_migration.families.base import Family, Params, ids, rebuild
from schema_migration.families.cents import INTEGER_MAX
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

BIG_DIGITS = (
    "9007199254740993", "123456789012345678", " 9999999999999999 ", "0018014398509481985",
    "9223372036854775807", "9223372036854775806 ",
)  # fmt: skip
"""Digit strings of 16 to 19 digits: 2**53 + 1, 2**54 + 1 after leading zeros, the largest INTEGER and
the one below it; all but the largest (where SQLite clamps) come out wrong through REAL (53 bits)."""


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON (RFC 8259)")


def parse(payload: str) -> object:
    """`payload` as JSON the way SQLite's json_valid() sees it: NaN and Infinity are not JSON."""
    return json.loads(payload, parse_constant=_no_constants)


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
            "spaces (U+0020) is one or more ASCII digits, that number (leading zeros dropped), exact at any size "
            "(e.g. ' 9007199254740993' -> 9007199254740993), else NULL "
            "(true/false, reals like 5.0, other strings give NULL); for a REAL column, the value if it is a JSON "
            "number (integer or real) stored as REAL, else NULL (a numeric string gives NULL). A sign is not a "
            "digit ('-5' and '+5' as strings give NULL); tabs and non-breaking spaces are not spaces. No JSON "
            f"integer or digit string in the data is larger than {INTEGER_MAX} (SQLite's largest INTEGER), so "
            "every such number fits the INTEGER column. Keep every row."
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
            return pick(
                rng, (None, "", "not json", '{"type": "click"', "[1, 2]", "null", "42", '"text"', "{'type': 'x'}")
            )
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

    def sample(
        self, p: Params, rng: random.Random, n: int, hard: bool, taken: frozenset[int] = frozenset()
    ) -> dict[str, list[Row]]:
        out = [
            (i, values.timestamp(rng), self._payload(p, rng, hard)) for i in ids(rng, n, 10_000 if hard else 1, taken)
        ]
        return {p["table"]: out}

    def context(self, p: Params, rows: Rows) -> Any:
        parsed: dict[int, object] = {}
        for i, _, payload in rows[p["table"]]:
            try:
                parsed[i] = parse(payload) if isinstance(payload, str) else MISSING
            except ValueError:
                parsed[i] = MISSING
        return parsed

    def _object(
        self, p: Params, rng: random.Random, field: str | None = None, value: object = MISSING
    ) -> dict[str, Any]:
        """A payload object with a plain value in every field, and `value` at `field`'s path."""
        obj: dict[str, Any] = {}
        for name, path, kind in p["fields"]:
            leaf = value if name == field else self._plain(rng, kind)
            if leaf is MISSING:
                continue
            *parents, key = path[2:].split(".")
            node = obj
            for step in parents:
                node = node.setdefault(step, {})
            node[key] = leaf
        return obj

    def _plain(self, rng: random.Random, kind: str) -> object:
        if kind == "TEXT":
            return pick(rng, ("click", "view", "purchase", *values.COUNTRIES))
        return randrange(rng, 1, 100_000) if kind == "INTEGER" else round(rng.uniform(0, 5000), 2)

    def kept(self, p: Params) -> dict[str, tuple[str, ...]]:
        return {p["table"]: ("received_at",)}

    def cases(self, p: Params) -> tuple[Rule, ...]:
        t = p["table"]

        def row(rng: random.Random, fresh: Fresh, payload: str | None) -> dict[str, list[Row]]:
            return {t: [(fresh(t), values.timestamp(rng), payload)]}

        def payloads(name: str, texts: Any, member: Any) -> ValueClass:
            return ValueClass(
                name,
                t,
                lambda rng, k, fresh: row(rng, fresh, texts(rng, k)),
                lambda r, parsed: member(r[2], parsed[r[0]]),
            )

        def field_classes(kind: str, name: str, leaves: tuple[object, ...], member: Any) -> ValueClass:
            fields = [f for f in p["fields"] if f[2] == kind]

            def make(rng: random.Random, k: int, fresh: Fresh) -> dict[str, list[Row]]:
                field = fields[k % len(fields)][0]
                return row(rng, fresh, pick(rng, ENCODERS).encode(self._object(p, rng, field, leaves[k % len(leaves)])))

            def inside(r: Row, parsed: Any) -> bool:
                obj = parsed[r[0]]
                return isinstance(obj, dict) and any(
                    (v := _get(obj, path)) is not MISSING and member(v) for _, path, _ in fields
                )

            return ValueClass(f"{kind} field: {name}", t, make, inside)

        def digits(v: object) -> bool:
            return isinstance(v, str) and v.strip(" ") != "" and set(v.strip(" ")) <= DIGITS

        def encoded(rng: random.Random) -> str:
            return pick(rng, ENCODERS).encode(self._object(p, rng))

        kinds = {f[2] for f in p["fields"]}
        payload = (
            payloads("payload NULL: every new column NULL", lambda rng, k: None, lambda v, o: v is None),
            payloads("payload '' or only whitespace: NULL", lambda rng, k: ("", "  ", "\n")[k % 3], lambda v, o: isinstance(v, str) and v.strip() == ""),
            payloads("payload not JSON (cut off, single quotes, NaN, words): NULL", lambda rng, k: (encoded(rng)[:-1], "{'type': 'x'}", '{"amount": NaN}', "not json", '{"a": 1,}', "{")[k],
                     lambda v, o: isinstance(v, str) and v.strip() != "" and o is MISSING or isinstance(v, str) and "NaN" in v),
            payloads("payload valid JSON but not an object (array, number, string, true, null): NULL", lambda rng, k: ("[1, 2]", "42", '"text"', "true", "null", '[{"type": "x"}]')[k],
                     lambda v, o: v is not None and o is not MISSING and not isinstance(o, dict)),
            payloads("payload an object with JSON whitespace around it: valid", lambda rng, k: ("  ", "\n", "\t", " \r\n")[k % 4] + encoded(rng) + ("\n", " ", "")[k % 3],
                     lambda v, o: isinstance(v, str) and isinstance(o, dict) and v != v.strip()),
            payloads("payload an object with a no-break space around it: not JSON, NULL", lambda rng, k: "\u00a0" + encoded(rng) if k % 2 else encoded(rng) + "\u00a0",
                     lambda v, o: isinstance(v, str) and "\u00a0" in (v[:1] + v[-1:])),
        )  # fmt: skip

        def broken(rng: random.Random, k: int) -> str:
            obj = self._object(p, rng)
            nested = [f for f in p["fields"] if "." in f[1][2:]]
            if nested and k % 2:
                obj[nested[k % len(nested)][1][2:].split(".")[0]] = ("x", [1], 5, None)[k % 4]
            else:
                obj.pop(next(iter(obj)), None)
            return pick(rng, ENCODERS).encode(obj)

        path = (
            payloads(
                "a key missing, or a non-object on the way: NULL",
                broken,
                lambda v, o: isinstance(o, dict) and any(_get(o, fp) is MISSING for _, fp, _ in p["fields"]),
            ),
        )
        fields: list[ValueClass] = []
        if "TEXT" in kinds:
            fields += [
                field_classes("TEXT", "a string with U+0020, tabs or no-break spaces at its ends: kept exactly", (" padded ", "\tx", "y\u00a0", "  z"), lambda v: isinstance(v, str) and v != v.strip()),
                field_classes("TEXT", "'' kept as ''", ("",), lambda v: v == ""),
                field_classes("TEXT", "non-ASCII text and escapes: decoded", ("naïve", "日本", "é\u00e9", "ü\"q\""), lambda v: isinstance(v, str) and (not v.isascii() or '"' in v)),
                field_classes("TEXT", "a number, true, false, null, object or array: NULL", (5, 1.5, True, None, {"a": 1}, ["x"]), lambda v: not isinstance(v, str)),
            ]  # fmt: skip
        if "INTEGER" in kinds:
            fields += [
                field_classes("INTEGER", "JSON integers, negative and large", (-3, 0, 10**12, -(2**62), 2**62), lambda v: isinstance(v, int) and not isinstance(v, bool) and (v <= 0 or v >= 10**12)),
                field_classes("INTEGER", "digit strings with U+0020 around them: trimmed", (" 42 ", "7 ", "  0042", " 9 "), lambda v: digits(v) and v != v.strip(" ")),
                field_classes("INTEGER", "digit strings of 16 to 19 digits, up to the INTEGER limit (past REAL's 53 bits): the exact number", BIG_DIGITS,
                              lambda v: digits(v) and len(v.strip(" ").lstrip("0")) >= 16),
                field_classes("INTEGER", "digit strings with leading zeros: the number", ("0042", "000", "007", "0"), lambda v: digits(v) and str(v).startswith("0")),
                field_classes("INTEGER", "signed digit strings: NULL", ("-5", "+5", " -12 ", "+0"), lambda v: isinstance(v, str) and v.strip(" ")[:1] in ("-", "+")),
                field_classes("INTEGER", "digit strings with a tab, newline or no-break space: NULL", ("\t7", "7\n", "\u00a07", "1\u20032"), lambda v: isinstance(v, str) and bool(set(v) & set("\t\n\u00a0\u2003"))),
                field_classes("INTEGER", "reals and real or exponent strings: NULL", (5.0, 5.5, "5.0", "1e3", 1e3, "12."), lambda v: isinstance(v, float) or isinstance(v, str) and bool(set(v) & set(".e"))),
                field_classes("INTEGER", "true, false, null, '' and spaces: NULL", (True, False, None, "", "   "), lambda v: isinstance(v, bool) or v is None or v in ("", "   ")),
                field_classes("INTEGER", "non-ASCII digits, inner spaces and other characters: NULL", ("\u0664\u0662", "\uff14\uff12", "4 2", "1/2", "x1", "12:30"), lambda v: isinstance(v, str) and v.strip(" ") != "" and not digits(v) and not set(v) & set("\t\n\u00a0\u2003.e+-")),
            ]  # fmt: skip
        if "REAL" in kinds:
            fields += [
                field_classes("REAL", "JSON integers: stored as REAL", (3, -7, 0, 10**12), lambda v: isinstance(v, int) and not isinstance(v, bool)),
                field_classes("REAL", "JSON reals, negative, tiny and huge", (12.5, -0.5, 1e-7, 1e300, -0.0), lambda v: isinstance(v, float) and (v <= 0 or v < 1e-3 or v > 1e6)),
                field_classes("REAL", "numeric strings, true, false, null: NULL", ("12.5", "3", True, None, [1]), lambda v: not isinstance(v, (int, float)) or isinstance(v, bool)),
            ]  # fmt: skip
        keep = "kept unchanged" if p["keep_payload"] else "dropped"
        exact = ", integers exact up to the INTEGER limit" if "INTEGER" in kinds else ""
        return (
            Rule("payload NULL, not valid JSON, or not an object: every new column NULL", payload),
            Rule("follow the path; a missing key or a non-object on the way gives NULL", path),
            Rule(f"take each field by its column's type{exact} (payload {keep})", tuple(fields)),
        )

    def extract(self, p: Params, payload: str | None) -> list[object]:
        try:
            obj = parse(payload) if payload is not None else None
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
