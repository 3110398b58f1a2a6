"""The local tools (`bash`, `edit`, `search`), each returning the text verifiers' program returns to the model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from arena_kit.harnesses.arena_bash.program.wire import json_body, send_request

SERPER_URL = "https://google.serper.dev/search"


def run_bash(command: str) -> str:
    try:
        result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=3600, check=False)
        return result.stdout + result.stderr
    except Exception as e:  # noqa: BLE001 - tool failures are returned to the model
        return f"error: {e}"


def run_edit(path: object, old_str: object, new_str: object) -> str:
    if not isinstance(path, str) or not path:
        return "error: 'path' is required"
    if not isinstance(old_str, str) or not isinstance(new_str, str):
        return "error: 'old_str' and 'new_str' must be strings"
    if not old_str:
        return "error: 'old_str' must be a non-empty string"
    filepath = Path(path)
    if not filepath.is_absolute():
        filepath = Path.cwd() / filepath
    if not filepath.exists():
        return f"error: {path} not found"
    try:
        content = filepath.read_text()
    except Exception as e:  # noqa: BLE001
        return f"error: could not read {path}: {e}"
    count = content.count(old_str)
    if count != 1:
        return f"error: old_str must appear exactly once in {path} (found {count})"
    try:
        filepath.write_text(content.replace(old_str, new_str, 1))
    except Exception as e:  # noqa: BLE001
        return f"error: could not write {path}: {e}"
    return f"Edited {path}"


def format_results(results: list[Any], query: str) -> str:
    sections = []
    for i, result in enumerate(results, 1):
        title = (result.get("title") or "").strip() or "Untitled"
        lines = [f"Result {i}: {title}"]
        if link := (result.get("link") or "").strip():
            lines.append(f"URL: {link}")
        if snippet := (result.get("snippet") or "").strip():
            lines.append(f"  - {snippet}")
        sections.append("\n".join(lines))
    if not sections:
        return f"No results returned for query: {query}"
    return "\n\n---\n\n".join(sections)


def run_search(query: str, api_key: str, num_results: object = 5) -> str:
    if not api_key:
        return "Error: no Serper API key (SERPER_API_KEY was not set in the eval environment)"
    try:
        count = max(1, int(num_results))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        count = 5
    try:
        response = send_request(
            "POST",
            SERPER_URL,
            {"X-API-KEY": api_key, "Content-Type": "application/json"},
            json_body({"q": query}),
            45.0,
            45.0,
        )
        body = response.read()
        if response.status >= 400:
            raise RuntimeError(f"Client error '{response.status} {response.reason}' for url '{SERPER_URL}'")
        organic = json.loads(body).get("organic") or []
        return format_results(organic[:count], query)
    except Exception as e:  # noqa: BLE001
        return f"search failed ({e}). Try again or rephrase the query."
