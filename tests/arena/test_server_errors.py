"""Bad input gets each dialect's own error shape and status, and the server keeps serving."""

import logging
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from arena.policies import PolicyResolver
from arena_kit.policy import Observation
from arena.server import MAX_BODY_BYTES, ServerHandle, start_in_thread

OPENAI_ROUTES = ("/v1/chat/completions", "/v1/responses")
ALL_ROUTES = (*OPENAI_ROUTES, "/v1/messages", "/v1/messages/count_tokens")
GOOD = {
    "/v1/chat/completions": {"model": "arena/echo", "messages": [{"role": "user", "content": "still up"}]},
    "/v1/responses": {"model": "arena/echo", "input": "still up"},
    "/v1/messages": {
        "model": "arena/echo",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "still up"}],
    },
    "/v1/messages/count_tokens": {
        "model": "arena/echo",
        "messages": [{"role": "user", "content": "still up"}],
    },
}


def crashing_policy(obs: Observation):
    raise ValueError("secret detail that should stay in the log")


def no_environments() -> tuple:
    """Keeps installed environments out of these tests (entry points are tested in test_policies)."""
    return ()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_in_thread(
        resolver=PolicyResolver({"arena/crash": crashing_policy}, entry_points=no_environments)
    ) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(server: ServerHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def assert_error_shape(route: str, reply: httpx.Response, status: int) -> str:
    """Checks the dialect's error body and returns its message."""
    assert reply.status_code == status, reply.text
    body = reply.json()
    if route in OPENAI_ROUTES:
        assert set(body["error"]) == {"message", "type", "param", "code"}
        return body["error"]["message"]
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
    return body["error"]["message"]


def assert_still_serving(http: httpx.Client, route: str) -> None:
    assert http.post(route, json=GOOD[route]).status_code == 200


@pytest.mark.parametrize("route", ALL_ROUTES)
def test_malformed_json_is_a_400_in_the_dialect_shape(http, route):
    bad = b'{"model": "arena/echo", "messages": ['
    reply = http.post(route, content=bad, headers={"content-type": "application/json"})
    assert "not valid JSON" in assert_error_shape(route, reply, 400)
    assert_still_serving(http, route)


@pytest.mark.parametrize("route", ALL_ROUTES)
def test_a_json_body_that_is_not_an_object_is_a_400(http, route):
    assert_error_shape(route, http.post(route, json=["model"]), 400)
    assert_still_serving(http, route)


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v1/chat/completions", {"model": "arena/echo"}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}),
        ("/v1/chat/completions", {"model": "arena/echo", "messages": {"role": "user"}}),
        ("/v1/responses", {"model": "arena/echo"}),
        ("/v1/responses", {"model": ["arena/echo"], "input": "x"}),
        ("/v1/messages", {"model": "arena/echo", "max_tokens": 5}),
        (
            "/v1/messages",
            {"model": "arena/echo", "messages": [{"role": "user", "content": "x"}], "tools": "Bash"},
        ),
        ("/v1/messages/count_tokens", {"messages": []}),
    ],
)
def test_missing_or_mistyped_fields_are_a_400(http, route, body):
    assert_error_shape(route, http.post(route, json=body), 400)
    assert_still_serving(http, route)


@pytest.mark.slow
def test_unknown_model_is_a_404_naming_the_available_policies_in_each_sdk(server, http):
    chat = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0)
    claude = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as chat_error:
        chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.NotFoundError) as responses_error:
        chat.responses.create(model="gpt-4o", input="x")
    with pytest.raises(anthropic.NotFoundError) as claude_error:
        claude.messages.create(model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert chat_error.value.code == responses_error.value.code == "model_not_found"
    assert claude_error.value.body["error"]["type"] == "not_found_error"
    for error in (chat_error, responses_error, claude_error):
        assert "arena/echo" in str(error.value) and "arena/crash" in str(error.value)
    assert_still_serving(http, "/v1/chat/completions")


@pytest.mark.parametrize("route", ALL_ROUTES)
def test_a_body_over_32_mib_is_a_413(http, route):
    oversized = b'{"model": "arena/echo", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    reply = http.post(route, content=oversized, headers={"content-type": "application/json"})
    assert_error_shape(route, reply, 413)
    assert_still_serving(http, route)


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v1/chat/completions", {"model": "arena/crash", "messages": [{"role": "user", "content": "x"}]}),
        ("/v1/responses", {"model": "arena/crash", "input": "x", "stream": True}),
        (
            "/v1/messages",
            {"model": "arena/crash", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
        ),
    ],
)
def test_a_policy_that_raises_is_a_500_with_a_short_message_and_a_logged_traceback(http, route, body, caplog):
    with caplog.at_level(logging.ERROR, logger="arena.server"):
        reply = http.post(route, json=body)
    message = assert_error_shape(route, reply, 500)
    assert "arena/crash" in message and "secret detail" not in message
    assert any(record.exc_info and "secret detail" in str(record.exc_info[1]) for record in caplog.records)
    assert_still_serving(http, route)


def test_each_request_logs_one_line_with_dialect_model_and_action(http, caplog):
    with caplog.at_level(logging.INFO, logger="arena.server"):
        http.post("/v1/responses", json={"model": "arena/staller", "input": "do the task"})
    (line,) = [r.getMessage() for r in caplog.records if r.name == "arena.server"]
    assert line.startswith("responses model=arena/staller") and "action=answer" in line
