"""The in-box program of the `arena-bash` harness: verifiers' bash chat loop on the stdlib alone.

It speaks the same wire as verifiers 0.4.0's bundled chat program (`harnesses/utils/{core,mcp,
compaction}.py` run with `--bash`): the same argv, request bodies (key order included, so the
interception and the model see byte-identical JSON), tools, tool-result text, truncation, gate
calls, compaction and exit codes; it only drops the openai/mcp/httpx/tenacity imports (≈1.2 CPU-s
per rollout) and the `uv sync` that installs them. Written into the box once per rollout and run
with `python3 -I`, so it must import nothing outside the standard library.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import ssl
import subprocess
import time
import traceback
import urllib.parse
from pathlib import Path
from typing import Any

MODEL_TRANSPORT_ERROR_EXIT_CODE = 97
SERPER_URL = "https://google.serper.dev/search"
MODEL_MAX_RETRIES = 2
"""The openai SDK's default `max_retries`; verifiers' loop also retries a broken stream this often."""
MCP_CALL_ATTEMPTS = 6
MCP_TIMEOUT = 600.0
MCP_MODERN_VERSION = "2026-07-28"
MCP_HANDSHAKE_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "arena-lean", "version": "0.1.0"}
TOOL_OUTPUT_MAX_BYTES = 20_000
RESERVE_TOKENS = 16_384
COMPACTION_ATTEMPTS = 3
RETRY_STATUSES = (408, 409, 429)

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command and return its combined stdout and stderr.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to run."}},
            "required": ["command"],
        },
    },
}
EDIT_TOOL = {
    "type": "function",
    "function": {
        "name": "edit",
        "description": "Replace a unique string in a file. old_str must appear exactly once in the file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (relative to cwd or absolute)."},
                "old_str": {"type": "string", "description": "Exact string to find (must appear exactly once)."},
                "new_str": {"type": "string", "description": "Replacement string."},
            },
            "required": ["path", "old_str", "new_str"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": (
            "Run a web search via Serper (Google) and return the top organic results as title, "
            "URL, and snippet. Issue focused queries and call it several times to cover different "
            "angles; use the bash tool (e.g. curl) to read a result page in full."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search query."},
                "num_results": {"type": "integer", "description": "Number of results to return (default 5)."},
            },
            "required": ["query"],
        },
    },
}
CHECKPOINT_COMPACTION_PROMPT = """You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Current progress and key decisions made
- Important context, constraints, or user preferences
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work.

Reply with the summary as plain text. Do not call any tools - summarize from the conversation as it stands."""
POST_COMPACTION_FRAMING = """Another language model started to solve this problem and produced \
a summary of its thinking process. You also have access to the state of the tools that \
were used by that language model. Use this to build on the work \
that has already been done and avoid duplicating work. Here is \
the summary produced by the other language model, use the \
information in this summary to assist with your own analysis:"""
CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded", "exceeds the context window", "reduce the length of the messages",
    "maximum context length", "prompt is too long", "request_too_large", "request entity too large",
    "exceeds the maximum number of tokens", "maximum prompt length is",
)
CONTEXT_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")
# The openai SDK dumps a streamed message and its tool calls in model-field order, extras after.
MESSAGE_FIELDS = ("content", "refusal", "role", "annotations", "audio", "function_call", "tool_calls")
TOOL_CALL_FIELDS = ("id", "function", "type")
FUNCTION_FIELDS = ("arguments", "name")


class TransportError(Exception):
    """The model endpoint could not be reached or its stream broke (the SDK's APIConnectionError)."""


class StatusError(Exception):
    """A non-2xx answer, worded like the openai SDK's APIStatusError (compaction reads the text)."""

    def __init__(self, status: int, body: object):
        super().__init__(f"Error code: {status} - {body}")
        self.status_code = status
        self.body = body.get("error", body) if isinstance(body, dict) else body


class CompactionFailed(Exception):
    """Every checkpoint attempt failed."""


# --- HTTP ------------------------------------------------------------------------------------

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


def _open(method: str, url: str, headers: dict[str, Any], body: bytes | None, read_timeout: float | None,
          connect_timeout: float = 5.0) -> http.client.HTTPResponse:
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


def _json_body(value: object) -> bytes:
    # The openai SDK's httpx encoding: compact separators, non-ASCII kept.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


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

    def request(self, method: str, path: str, payload: object | None, retry_header: str | None = None) -> http.client.HTTPResponse:
        """A 2xx response, after the SDK's own retries (connection errors, 408/409/429/5xx)."""
        body = None if payload is None else _json_body(payload)
        for retries_taken in range(MODEL_MAX_RETRIES + 1):
            headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json",
                       "x-stainless-retry-count": retry_header or str(retries_taken)}
            if body is not None:
                headers["Content-Type"] = "application/json"
            last = retries_taken == MODEL_MAX_RETRIES
            try:
                response = _open(method, self.base_url + path, headers, body, self.read_timeout)
            except TransportError:
                if last:
                    raise
                _retry_sleep(retries_taken, None)
                continue
            if 200 <= response.status < 300:
                return response
            text = response.read().decode("utf-8", "replace").strip()
            should = (response.getheader("x-should-retry") or "").lower()
            retry = should == "true" or (should != "false" and (response.status in RETRY_STATUSES or response.status >= 500))
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
        payload: dict[str, Any] = {"model": model, "stream": True, "messages": messages, "stream_options": {"include_usage": True}}
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


# --- streamed completions ----------------------------------------------------------------------

def _accumulate(acc: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The openai SDK's `accumulate_delta`: strings concatenate, dicts merge, lists merge by index."""
    for key, value in delta.items():
        if key not in acc or acc[key] is None:
            acc[key] = value
            continue
        current = acc[key]
        if key in ("index", "type"):
            acc[key] = value
        elif isinstance(current, str) and isinstance(value, str):
            acc[key] = current + value
        elif isinstance(current, (int, float)) and isinstance(value, (int, float)):
            acc[key] = current + value
        elif isinstance(current, dict) and isinstance(value, dict):
            acc[key] = _accumulate(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            if all(isinstance(x, (str, int, float)) for x in current):
                current.extend(value)
                continue
            for entry in value:
                index = entry["index"]
                if index < len(current):
                    current[index] = _accumulate(current[index], entry)
                else:
                    current.append(entry)
    return acc


def _accumulate_reasoning(acc: dict[str, Any], delta: dict[str, Any]) -> None:
    """verifiers' `_accumulate_streamed_message`: role and reasoning fields the SDK would mangle."""
    if role := delta.get("role"):
        acc["role"] = role
    for field_name in ("reasoning", "reasoning_content"):
        if value := delta.get(field_name):
            acc[field_name] = acc.get(field_name, "") + value
    details = acc.setdefault("reasoning_details", []) if delta.get("reasoning_details") else None
    for detail in delta.get("reasoning_details") or []:
        previous = details[-1] if details else {}
        detail_type = detail.get("type")
        content_field = {"reasoning.summary": "summary", "reasoning.text": "text"}.get(detail_type)
        if content_field and detail_type == previous.get("type") and all(
            previous.get(f) is None or detail.get(f) is None or previous[f] == detail[f] for f in ("id", "index", "format")
        ):
            previous[content_field] = (previous.get(content_field) or "") + (detail.get(content_field) or "")
            for f in ("id", "index", "signature", "format"):
                if previous.get(f) is None and detail.get(f) is not None:
                    previous[f] = detail[f]
        else:
            details.append(dict(detail))  # type: ignore[union-attr]


def _ordered(value: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """`value` without None entries, model fields first (as the SDK's `model_dump(exclude_none=True)`)."""
    out = {key: value[key] for key in fields if value.get(key) is not None}
    out.update((key, item) for key, item in value.items() if key not in fields and item is not None)
    return out


def dump_message(message: dict[str, Any]) -> dict[str, Any]:
    out = _ordered(message, MESSAGE_FIELDS)
    if "tool_calls" in out:
        calls = []
        for call in out["tool_calls"]:
            call = _ordered(call, TOOL_CALL_FIELDS)
            if isinstance(call.get("function"), dict):
                call["function"] = _ordered(call["function"], FUNCTION_FIELDS)
            calls.append(call)
        out["tool_calls"] = calls
    return out


def read_stream(response: http.client.HTTPResponse) -> dict[str, Any]:
    """Assemble an SSE chat stream into `{"choices": [{"message", "finish_reason"}], "usage"}`."""
    choices: dict[int, dict[str, Any]] = {}
    overrides: dict[int, dict[str, Any]] = {}
    usage = None
    seen = False
    data_lines: list[str] = []
    try:
        for raw in response:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line.startswith("data:"):
                data_lines.append(line[5:].removeprefix(" "))
                continue
            if line or not data_lines:
                continue
            data, data_lines = "\n".join(data_lines), []
            if data.startswith("[DONE]"):
                break
            chunk = json.loads(data)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise RuntimeError(f"model stream error: {chunk['error']}")
            seen = True
            if chunk.get("usage") is not None:
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                index = choice.get("index", 0)
                snapshot = choices.setdefault(index, {"message": {}, "finish_reason": None})
                delta = {k: v for k, v in (choice.get("delta") or {}).items()}
                _accumulate(snapshot["message"], json.loads(json.dumps(delta)))
                if choice.get("finish_reason") is not None:
                    snapshot["finish_reason"] = choice["finish_reason"]
                if any(delta.get(f) for f in ("role", "reasoning", "reasoning_content", "reasoning_details")):
                    _accumulate_reasoning(overrides.setdefault(index, {}), delta)
    except (OSError, http.client.HTTPException) as error:
        raise TransportError(f"model stream broke: {error}") from error
    finally:
        response.close()
    if not seen or not choices or any(c["finish_reason"] is None for c in choices.values()):
        raise TransportError("Model stream ended before a completion finished")
    ordered = [choices[i] for i in sorted(choices)]
    for index, choice in zip(sorted(choices), ordered):
        extra = overrides.setdefault(index, {})
        extra.setdefault("role", "assistant")
        choice["message"].update(extra)
    return {"choices": ordered, "usage": usage}


# --- local tools -------------------------------------------------------------------------------

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
        response = _open("POST", SERPER_URL, {"X-API-KEY": api_key, "Content-Type": "application/json"},
                         _json_body({"q": query}), 45.0, 45.0)
        body = response.read()
        if response.status >= 400:
            raise RuntimeError(f"Client error '{response.status} {response.reason}' for url '{SERPER_URL}'")
        organic = json.loads(body).get("organic") or []
        return format_results(organic[:count], query)
    except Exception as e:  # noqa: BLE001
        return f"search failed ({e}). Try again or rephrase the query."


# --- MCP (streamable HTTP, the subset verifiers' bash program uses) ------------------------------

class MCPError(Exception):
    """A JSON-RPC error or an unreadable answer from an MCP server."""


class MCPServer:
    """One server: initialize once, then tools/list and tools/call, reconnecting on failure."""

    def __init__(self, spec: dict[str, Any]):
        self.url = spec["url"]
        self.headers = dict(spec.get("headers") or {})
        self.timeout = float(spec.get("timeout", MCP_TIMEOUT))
        self.connect_timeout = float(spec.get("connect_timeout", 5.0))
        self.session: dict[str, str] | None = None
        self.next_id = 0

    def _post(self, message: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any] | None:
        headers = {**self.headers, **extra, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        response = _open("POST", self.url, headers, _json_body(message), self.timeout, self.connect_timeout)
        try:
            if response.status == 202 or "id" not in message:
                response.read()
                if response.status >= 400:
                    raise MCPError(f"{message['method']}: HTTP {response.status}")
                return None
            if response.status >= 400:
                raise MCPError(f"{message['method']}: HTTP {response.status}: {response.read()[:500]!r}")
            if session_id := response.getheader("mcp-session-id"):
                extra["mcp-session-id"] = session_id
            if (response.getheader("content-type") or "").startswith("text/event-stream"):
                answer = _sse_answer(response, message["id"])
            else:
                answer = json.loads(response.read())
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise MCPError(f"{message['method']}: {error}") from error
        finally:
            response.close()
        if not isinstance(answer, dict):
            raise MCPError(f"{message['method']}: no answer")
        if "error" in answer:
            raise MCPError(f"{message['method']}: {answer['error'].get('message')}")
        return answer.get("result") or {}

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.session is None:
            self.session = self._handshake()
        headers = dict(self.session)
        if headers.get("mcp-protocol-version") == MCP_MODERN_VERSION:
            # The stateless (2026-07-28) era: every request names itself and carries the client's _meta.
            headers["mcp-method"] = method
            if method == "tools/call":
                headers["mcp-name"] = str(params.get("name"))
            params = {**params, "_meta": self._meta()}
        return self._post({"jsonrpc": "2.0", "id": self._id(), "method": method, "params": params}, headers) or {}

    def _handshake(self) -> dict[str, str]:
        """The mcp SDK's `auto` mode: probe `server/discover`, else the 2025 `initialize` handshake."""
        session: dict[str, str] = {"mcp-protocol-version": MCP_MODERN_VERSION}
        try:
            self._post({"jsonrpc": "2.0", "id": self._id(), "method": "server/discover", "params": {"_meta": self._meta()}},
                       {**session, "mcp-method": "server/discover"})
            return session
        except MCPError:
            pass
        session = {}
        init = self._post({"jsonrpc": "2.0", "id": self._id(), "method": "initialize", "params": {
            "protocolVersion": MCP_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}}, session) or {}
        session["mcp-protocol-version"] = str(init.get("protocolVersion") or MCP_HANDSHAKE_VERSION)
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        return session

    @staticmethod
    def _meta() -> dict[str, Any]:
        return {"io.modelcontextprotocol/protocolVersion": MCP_MODERN_VERSION,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO, "io.modelcontextprotocol/clientCapabilities": {}}

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def run(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """verifiers' MCPConnection: six attempts, exponential jittered waits, a fresh session each."""
        for attempt in range(MCP_CALL_ATTEMPTS):
            try:
                return self._rpc(method, params)
            except (MCPError, TransportError):
                self.session = None
                if attempt == MCP_CALL_ATTEMPTS - 1:
                    raise
                time.sleep(min(0.5 * 2**attempt, 30.0) + random.uniform(0, 1))
        raise AssertionError("unreachable")


def _sse_answer(response: http.client.HTTPResponse, request_id: int) -> dict[str, Any] | None:
    data_lines: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data_lines.append(line[5:].removeprefix(" "))
        elif not line and data_lines:
            event, data_lines = json.loads("\n".join(data_lines)), []
            if isinstance(event, dict) and event.get("id") == request_id and ("result" in event or "error" in event):
                return event
    return None


def connect_mcp(config: dict[str, Any], reserved: set[str]) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    tool_schemas: list[Any] = []
    dispatch: dict[str, Any] = {}
    servers: dict[str, Any] = {}
    for name, spec in config.get("mcpServers", {}).items():
        server = servers[name] = MCPServer(spec)
        for tool in server.run("tools/list", {}).get("tools") or []:
            full = f"{name}_{tool['name']}" if name else tool["name"]
            if full in reserved or full in dispatch:
                raise ValueError(f"duplicate tool name {full!r}; keep MCP tool names qualified")
            tool_schemas.append({"type": "function", "function": {
                "name": full, "description": tool.get("description") or "", "parameters": tool.get("inputSchema")}})
            dispatch[full] = (name, tool["name"])
    return tool_schemas, dispatch, servers


def mcp_content(blocks: list[Any]) -> object:
    """verifiers' `mcp_content_to_chat_content`: text blocks joined by newlines, images as parts."""
    parts = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"}})
        else:
            parts.append({"type": "text", "text": str(block)})
    if not parts:
        return str(blocks)
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


# --- bounding and compaction -----------------------------------------------------------------

def estimated_tokens(chars: str) -> int:
    return (len(chars) + 3) // 4


def truncate_tool_output(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= TOOL_OUTPUT_MAX_BYTES:
        return text
    keep = TOOL_OUTPUT_MAX_BYTES // 2
    head = data[:keep].decode("utf-8", errors="ignore")
    tail = data[-keep:].decode("utf-8", errors="ignore")
    return (
        f"Warning: truncated output (original token count: {estimated_tokens(text)})\n"
        f"Total output lines: {text.count(chr(10)) + 1}\n\n"
        f"{head}\n[... {len(data) - 2 * keep} bytes truncated ...]\n{tail}"
    )


def bound_tool_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": truncate_tool_output(content)}
    return message


def is_context_overflow(error: StatusError) -> bool:
    details = f"{error} {error.body or ''}"
    return error.status_code in (400, 413) and any(m in details.casefold() for m in CONTEXT_OVERFLOW_MARKERS)


def discover_threshold(client: ModelClient, model: str) -> int | None:
    try:
        cards = client.models()
    except (StatusError, TransportError, ValueError):
        return None
    for card in cards:
        if not isinstance(card, dict) or card.get("id") != model:
            continue
        for field in CONTEXT_WINDOW_FIELDS:
            value = card.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return max(value - RESERVE_TOKENS, value // 2)
        break
    return None


def compactable(messages: list[Any]) -> bool:
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    return any(m.get("role") != "system" and i != first_user for i, m in enumerate(messages))


def context_tokens(completion: dict[str, Any]) -> int:
    usage = completion.get("usage")
    if not usage:
        return 0
    return (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)


class Compactor:
    """verifiers' Compactor: compact once and retry once when a turn exhausts the context."""

    def __init__(self, client: ModelClient, model: str, tools: list[Any], enabled: bool, threshold: int | None):
        self.client, self.model, self.tools = client, model, tools
        self.enabled, self.threshold = enabled, threshold
        self.compacted = False
        self.last_good = 0

    def reached(self, completion: dict[str, Any], extra_tokens: int = 0) -> bool:
        return self.enabled and self.threshold is not None and context_tokens(completion) + extra_tokens >= self.threshold

    def complete(self, messages: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        try:
            completion = self.client.chat(self.model, messages, self.tools)
        except StatusError as error:
            if not self.enabled or self.threshold is None or not is_context_overflow(error):
                raise
            if not compactable(messages):
                if self.compacted:
                    raise CompactionFailed("the compacted conversation still overflows") from error
                raise
        else:
            if not self.reached(completion):
                self.last_good = len(messages)
                return completion, messages
            if completion["choices"][0]["finish_reason"] != "length" or not compactable(messages):
                return completion, messages
        messages = self.compact(messages)
        try:
            completion = self.client.chat(self.model, messages, self.tools)
        except StatusError as error:
            if is_context_overflow(error):
                raise CompactionFailed("the rebuilt conversation still overflows") from error
            raise
        return completion, messages

    def compact(self, messages: list[Any]) -> list[Any]:
        system = [m for m in messages if m.get("role") == "system"]
        base = messages
        for _ in range(COMPACTION_ATTEMPTS):
            checkpoint = [*base, {"role": "user", "content": CHECKPOINT_COMPACTION_PROMPT}]
            try:
                completion = self.client.chat(self.model, checkpoint, self.tools, tool_choice="none")
            except StatusError as error:
                if not is_context_overflow(error):
                    raise
                base = messages[: self.last_good]
                continue
            message = completion["choices"][0]["message"]
            text = (message.get("content") or "").strip()
            if not message.get("tool_calls") and text:
                rebuilt = [*system, {"role": "user", "content": POST_COMPACTION_FRAMING + "\n\n" + text}]
                self.last_good = len(rebuilt)
                self.compacted = True
                return rebuilt
        raise CompactionFailed(f"no usable summary after {COMPACTION_ATTEMPTS} attempts")


# --- the loop ----------------------------------------------------------------------------------

def gate_tool_call(url: str, api_key: str, call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        arguments = function.get("arguments")
    body = _json_body({"tool_call_id": call.get("id"), "name": function.get("name"), "arguments": arguments})
    response = _open("POST", url, {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}, body, None)
    payload = response.read()
    response.close()
    if response.status >= 400:
        raise RuntimeError(f"tool gate answered HTTP {response.status} for {url}")
    decision: dict[str, Any] = json.loads(payload)
    if decision["action"] == "stop":
        raise RuntimeError(decision["reason"])
    return decision


def run_tool(args: argparse.Namespace, name: str | None, arguments: str | None, dispatch: dict[str, Any], servers: dict[str, Any]) -> object:
    try:
        tool_args = json.loads(arguments or "{}")
    except json.JSONDecodeError as e:
        return f"error: invalid JSON in tool arguments ({e}); resend the call with valid JSON"
    if not isinstance(tool_args, dict):
        return f"error: tool arguments must be a JSON object, got {type(tool_args).__name__}; resend as an object"
    if name in dispatch:
        server_name, raw = dispatch[name]
        result = servers[server_name].run("tools/call", {"name": raw, "arguments": tool_args})
        return mcp_content(result.get("content") or [])
    if name == "bash" and args.bash:
        return run_bash(tool_args.get("command", ""))
    if name == "edit" and args.edit:
        return run_edit(tool_args.get("path"), tool_args.get("old_str"), tool_args.get("new_str"))
    if name == "search" and args.search:
        return run_search(tool_args.get("query", ""), args.serper_key, tool_args.get("num_results", 5))
    return f"error: unknown tool {name!r}"


def run_chat_loop(args: argparse.Namespace, compactor: Compactor, messages: list[Any], dispatch: dict[str, Any], servers: dict[str, Any]) -> None:
    while True:
        try:
            completion, messages = compactor.complete(messages)
        except StatusError as error:
            compacting = compactor.enabled and compactor.threshold is not None
            if compacting or not is_context_overflow(error):
                raise
            return
        message = dump_message(completion["choices"][0]["message"])
        messages.append(message)
        if not message.get("tool_calls"):
            return
        tool_result_tokens = 0
        for call in message["tool_calls"]:
            function = call.get("function") or {}
            name = function.get("name")
            tool_message = {"role": "tool", "tool_call_id": call.get("id"), "content": "", "name": name}
            if args.tool_interception_url:
                decision = gate_tool_call(args.tool_interception_url, args.api_key, call)
                if decision["action"] == "deny":
                    denied = bound_tool_message(decision["message"])
                    messages.append(denied)
                    tool_result_tokens += estimated_tokens(str(denied.get("content", "")))
                    continue
            tool_message["content"] = run_tool(args, name, function.get("arguments"), dispatch, servers)
            tool_message = bound_tool_message(tool_message)
            messages.append(tool_message)
            tool_result_tokens += estimated_tokens(str(tool_message["content"]))
        if compactor.reached(completion, tool_result_tokens) and compactable(messages):
            messages = compactor.compact(messages)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--system-prompt", default="")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--initial-messages-file", default="")
    parser.add_argument("--mcp-config", default="")
    parser.add_argument("--tool-interception-url", default="")
    parser.add_argument("--bash", action="store_true")
    parser.add_argument("--compaction", action="store_true")
    parser.add_argument("--summarize-at-tokens", type=int)
    parser.add_argument("--edit", action="store_true")
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--serper-key", default="")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    initial = []
    if args.initial_messages_file:
        path = Path(args.initial_messages_file)
        payload = path.read_bytes()
        path.unlink()
        initial = json.loads(payload)
    client = ModelClient(args.base_url, args.api_key, 600.0 if args.bash else None)
    config = json.loads(args.mcp_config or "{}")
    tools = [BASH_TOOL] if args.bash else []
    reserved = {"bash"} if args.bash else set()
    if args.edit:
        tools.append(EDIT_TOOL)
        reserved.add("edit")
    if args.search:
        tools.append(SEARCH_TOOL)
        reserved.add("search")
    mcp_tools, dispatch, servers = connect_mcp(config, reserved) if config.get("mcpServers") else ([], {}, {})
    tools += mcp_tools
    messages = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
    if initial:
        messages.extend(initial)
    elif args.prompt:
        messages.append({"role": "user", "content": args.prompt})
    compactor = Compactor(client, args.model, tools, args.compaction, args.summarize_at_tokens)
    if compactor.enabled and compactor.threshold is None:
        compactor.threshold = discover_threshold(client, args.model)
    compactor.last_good = len(messages)
    run_chat_loop(args, compactor, messages, dispatch, servers)


if __name__ == "__main__":
    main()
