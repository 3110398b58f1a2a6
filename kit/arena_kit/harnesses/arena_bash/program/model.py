"""The model endpoint (the interception URL): chat completions and the model list, retried as the openai SDK retries."""

from __future__ import annotations

import http.client
import json
import random
import time
import traceback
from typing import Any

from arena_kit.harnesses.arena_bash.program.stream import read_stream
from arena_kit.harnesses.arena_bash.program.wire import TransportError, json_body, send_request

MODEL_TRANSPORT_ERROR_EXIT_CODE = 97
MODEL_MAX_RETRIES = 2
"""The openai SDK's default `max_retries`; verifiers' loop also retries a broken stream this often."""
RETRY_STATUSES = (408, 409, 429)


class StatusError(Exception):
    """A non-2xx answer, worded like the openai SDK's APIStatusError (compaction reads the text)."""

    def __init__(self, status: int, body: object):
        super().__init__(f"Error code: {status} - {body}")
        self.status_code = status
        self.body = body.get("error", body) if isinstance(body, dict) else body


def _retry_sleep(retries_taken: int, retry_after: str | None) -> None:
    try:
        seconds = float(retry_after) if retry_after is not None else -1.0
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 60:
        seconds = min(0.5 * 2.0**retries_taken, 8.0) * (1 - 0.25 * random.random())
    time.sleep(seconds)


class ModelClient:
    """Chat completions and the model list through the interception URL, retried like the SDK."""

    def __init__(self, base_url: str, api_key: str, read_timeout: float | None):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.read_timeout = read_timeout

    def request(
        self, method: str, path: str, payload: object | None, retry_header: str | None = None
    ) -> http.client.HTTPResponse:
        """A 2xx response, after the SDK's own retries (connection errors, 408/409/429/5xx)."""
        body = None if payload is None else json_body(payload)
        for retries_taken in range(MODEL_MAX_RETRIES + 1):
            headers = {
                "Authorization": f"Bearer {self.api_key}",
                "Accept": "application/json",
                "x-stainless-retry-count": retry_header or str(retries_taken),
            }
            if body is not None:
                headers["Content-Type"] = "application/json"
            last = retries_taken == MODEL_MAX_RETRIES
            try:
                response = send_request(method, self.base_url + path, headers, body, self.read_timeout)
            except TransportError:
                if last:
                    raise
                _retry_sleep(retries_taken, None)
                continue
            if 200 <= response.status < 300:
                return response
            text = response.read().decode("utf-8", "replace").strip()
            should = (response.getheader("x-should-retry") or "").lower()
            retry = should == "true" or (
                should != "false" and (response.status in RETRY_STATUSES or response.status >= 500)
            )
            if retry and not last:
                _retry_sleep(retries_taken, response.getheader("retry-after"))
                continue
            try:
                parsed: object = json.loads(text)
            except ValueError:
                parsed = text
            raise StatusError(response.status, parsed)
        raise AssertionError("unreachable")

    def chat(self, model: str, messages: list[Any], tools: list[Any], tool_choice: str | None = None) -> dict[str, Any]:
        """One streamed completion, assembled; a broken stream is retried with the retry header."""
        # Key order as the openai 3.x SDK baked into Arena's images sends it (2.x puts `messages`
        # first): the scripted model server seeds on the body's bytes, so order is behaviour.
        payload: dict[str, Any] = {
            "model": model,
            "stream": True,
            "messages": messages,
            "stream_options": {"include_usage": True},
        }
        if tools and tool_choice is not None:
            payload["tool_choice"] = tool_choice
        if tools:
            payload["tools"] = tools
        try:
            for attempt in range(MODEL_MAX_RETRIES + 1):
                response = self.request("POST", "/chat/completions", payload, str(attempt) if attempt else None)
                try:
                    return read_stream(response)
                except TransportError:
                    if attempt == MODEL_MAX_RETRIES:
                        raise
                    time.sleep(random.uniform(0, min(8.0, 0.5 * 2**attempt)))
            raise AssertionError("unreachable")
        except TransportError:
            traceback.print_exc()
            raise SystemExit(MODEL_TRANSPORT_ERROR_EXIT_CODE) from None

    def models(self) -> list[Any]:
        response = self.request("GET", "/models", None)
        try:
            body = response.read()
        except (OSError, http.client.HTTPException) as error:  # the SDK's APIConnectionError
            raise TransportError(f"GET /models: {error}") from error
        data = json.loads(body)
        return data.get("data") or [] if isinstance(data, dict) else []
