"""Lean-path retries match the fault's type: a real typed fault buys a retry, text carrying the docker CLI's words never does."""

from __future__ import annotations

import pytest
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.errors import HarnessError, SandboxError, TaskError, stop_condition
from verifiers.v1.trace import Error
from verifiers.v1.utils.retries import RetryState

from arena.retries import INFRA_RULES, retries_table
from arena.traces import INFRA_STOPS
from arena_kit.errors import BoxLostError, EngineUnreachableError, StartMissedError

OLD_WORDS = [
    "docker run failed: Cannot connect to the Docker daemon (ConnectionError: reset). Is the docker daemon running?",
    "docker run failed: Error response from daemon: No such container: vf-0123",
    "container live process failed to start: PID unavailable",
]


def retried(error: BaseException) -> bool:
    recorded = Error(type=type(error).__name__, message=str(error))
    return RetryState(RetryConfig.model_validate(retries_table())).next_error([recorded]) is recorded


@pytest.mark.parametrize("fault", [BoxLostError, EngineUnreachableError, StartMissedError])
def test_a_real_typed_fault_is_retried_whatever_its_words(fault: type[SandboxError]) -> None:
    assert retried(fault("anything at all"))


@pytest.mark.parametrize("words", OLD_WORDS)
@pytest.mark.parametrize("kind", [HarnessError, TaskError, RuntimeError])
def test_the_docker_cli_words_in_another_type_buy_no_retry(kind: type[Exception], words: str) -> None:
    assert not retried(kind(words))


@pytest.mark.parametrize("words", OLD_WORDS)
def test_agent_output_quoted_in_a_lean_error_buys_no_retry(words: str) -> None:
    # What the lean runtime makes of a box's own words: marked while the engine reports the box running.
    assert not retried(SandboxError(f"in the running box: read 'done.txt': {words}"))
    assert not retried(HarnessError(f"harness 'arena-bash' exited 1: {words}"))


def test_every_typed_fault_has_a_rule_and_a_reported_stop_condition() -> None:
    faults = [BoxLostError, EngineUnreachableError, StartMissedError]
    assert {rule.type for rule in INFRA_RULES if rule.message is None and rule.status_code is None} == {
        f.__name__ for f in faults
    }
    assert {stop_condition(f("x")) for f in faults} == set(INFRA_STOPS)
