"""An attached exec start on the Engine API's wire: the upgrade request, and what an error answer says."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import docker.errors

__all__ = ["refusal", "refusal_message", "sdk_error", "start_request"]


def start_request(api_version: str, exec_id: str) -> bytes:
    """`POST /exec/<id>/start` attached, asking the engine to upgrade the connection to the raw stream."""
    body = json.dumps({"Detach": False, "Tty": False}).encode()
    return (
        f"POST /v{api_version}/exec/{exec_id}/start HTTP/1.1\r\nHost: docker\r\n"
        "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def refusal(head: bytes) -> tuple[int, str, int | None] | None:
    """None for the engine's upgrade answer (101, or 200 from engines that skip it); for an error
    answer, its status, status line and Content-Length (None: not given)."""
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    if status in (101, 200):
        return None
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    length = headers.get("content-length", "")
    return status, status_line, int(length) if length.isdigit() else None


def refusal_message(body: bytes, status_line: str) -> str:
    """The engine's message in an error answer's body (its JSON `message`, else the text, else the status line)."""
    try:
        return str(json.loads(body)["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace").strip() or status_line


def sdk_error(status: int, message: str) -> docker.errors.APIError:
    """The docker SDK's error for a refused exec start (NotFound for 404), as its own calls raise it."""
    import docker.errors  # here: reading the wire needs no docker SDK

    kind = docker.errors.NotFound if status == 404 else docker.errors.APIError
    return kind(f"{status}: {message}", explanation=message)
