"""HTTP/1.1 and server-sent events on `http.client`: one request per connection, JSON bodies as the SDKs encode them."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from collections.abc import Iterator
from typing import Any


class TransportError(Exception):
    """The model endpoint could not be reached or its stream broke (the SDK's APIConnectionError)."""


def _connect(url: str, connect_timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=connect_timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=connect_timeout)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return conn, target


def send_request(
    method: str,
    url: str,
    headers: dict[str, Any],
    body: bytes | None,
    read_timeout: float | None,
    connect_timeout: float = 5.0,
) -> http.client.HTTPResponse:
    """Send one request and return the response with its headers read (TransportError on failure)."""
    conn, target = _connect(url, connect_timeout)
    try:
        conn.connect()
        conn.sock.settimeout(read_timeout)
        conn.request(method, target, body=body, headers=headers)
        return conn.getresponse()
    except (OSError, http.client.HTTPException) as error:
        conn.close()
        raise TransportError(f"{method} {url}: {error}") from error


def json_body(value: object) -> bytes:
    # The openai SDK's httpx encoding: compact separators, non-ASCII kept.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def sse_data(response: http.client.HTTPResponse) -> Iterator[str]:
    """Each event's `data` as one string (its `data:` lines joined by newlines); other fields are skipped.

    Read errors propagate as `http.client`/`OSError` raises them; the caller words them for its channel."""
    data_lines: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data_lines.append(line[5:].removeprefix(" "))
            continue
        if line or not data_lines:
            continue
        data, data_lines = "\n".join(data_lines), []
        yield data
