"""The model server's set latency (the bench's stand-in for a real model): every turn waits at least
that long, the waits overlap, and the wait costs no CPU."""

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from arena.policies import PolicyResolver
from arena.server import build_app, start_in_thread
from arena_kit.policy import Answer
from arena_kit.scripted import ScriptedPolicy

LATENCY = 0.6


def _turn(url: str) -> tuple[float, dict]:
    body = json.dumps({"model": "arena/answer", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.loads(response.read())
    return time.monotonic() - started, answer


def _resolver() -> PolicyResolver:
    return PolicyResolver({"arena/answer": ScriptedPolicy([Answer("DONE")])}, entry_points=lambda: ())


@pytest.mark.slow
def test_every_turn_waits_the_latency_and_concurrent_turns_overlap():
    with start_in_thread(resolver=_resolver(), latency=LATENCY) as server:
        waited, answer = _turn(server.url)
        assert waited >= LATENCY
        assert answer["choices"][0]["message"]["content"] == "DONE"
        cpu_before = time.process_time()
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            waits = [w for w, _ in pool.map(lambda _: _turn(server.url), range(8))]
        together = time.monotonic() - started
        cpu = time.process_time() - cpu_before
    assert min(waits) >= LATENCY
    # Served one after another, eight turns take at least 8 × 0.6 s: less than that is overlap, at any load.
    assert together < 8 * LATENCY
    assert cpu < 8 * LATENCY / 2  # asleep, not spinning


def test_without_latency_a_turn_answers_at_once():
    with start_in_thread(resolver=_resolver()) as server:
        waited, _ = _turn(server.url)
    assert waited < LATENCY


def test_a_negative_latency_is_refused_in_words():
    with pytest.raises(ValueError, match="latency must be seconds"):
        build_app(_resolver(), latency=-1)
