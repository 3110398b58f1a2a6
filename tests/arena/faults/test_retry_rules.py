"""Arena's retry rules, applied by verifiers' own matcher: the recorded infrastructure faults retry,
an agent's or a grader's outcome never does, and every eval carries them as whole-episode retries."""

import pytest
from verifiers.v1.configs.retries import RetryConfig
from verifiers.v1.trace import Error
from verifiers.v1.utils.retries import RetryState

import verifiers.v1 as vf
from arena.evalrun import EvalRequest, eval_config
from arena.retries import INFRA_RULES, retries_table
from arena_kit.envs.lean import LeanEnvConfig

# Messages as verifiers 0.4.0 and the lean runtime recorded them when the faults were provoked (see
# arena/retries.py; the lean runtime's words are provoked one by one in tests/kit/runtimes/lean_docker/test_errors.py).
INFRA = [
    pytest.param(
        "RuntimeError",
        "docker runtime selected but the engine is not reachable: Cannot connect to the Docker "
        "daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
        None,
        id="engine-down-at-start",
    ),
    pytest.param(
        "EngineUnreachableError",
        "the docker engine is not reachable: Error while fetching server API "
        "version: ('Connection aborted.', FileNotFoundError(2, 'No such file or directory')). Start Docker (or "
        'set DOCKER_HOST), or select the stock runtime with `[env] docker = "stock"`',
        None,
        id="engine-down-at-lean-box-start",
    ),
    pytest.param("BoxLostError", "the box vf-0123 is gone: the engine reports it removed", None, id="lean-box-lost"),
    pytest.param("StartMissedError", "the harness did not start in its box", None, id="lean-harness-start-missed"),
    pytest.param(
        "SandboxError",
        "docker run failed: Cannot connect to the Docker daemon (ConnectionError: ('Connection "
        "aborted.', ConnectionResetError(104, 'Connection reset by peer'))). Is the docker daemon running?",
        None,
        id="engine-lost-under-a-lean-exec",
    ),
    pytest.param(
        "SandboxError",
        "docker run failed: Error response from daemon: No such container: vf-0123",
        None,
        id="lean-box-gone",
    ),
    pytest.param(
        "SandboxError",
        "docker run failed: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?",
        None,
        id="engine-down-mid-rollout",
    ),
    pytest.param(
        "SandboxError",
        "read 'done.txt': error during connect: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.47/containers/json\": EOF",
        None,
        id="engine-connection-lost",
    ),
    pytest.param("SandboxError", "runtime died under harness 'bash' (exit 137): <no output>", None, id="box-removed"),
    pytest.param(
        "SandboxError", "read 'done.txt': Error response from daemon: No such container: vf-0123", None, id="box-gone"
    ),
    pytest.param(
        "SandboxError",
        "docker workdir setup failed: Error response from daemon: container 0123 is not running",
        None,
        id="box-stopped",
    ),
    pytest.param(
        "SandboxError", "container live process failed to start: PID unavailable", None, id="harness-start-deadline"
    ),
    pytest.param("ProviderError", "All connection attempts failed", 503, id="model-server-refused"),
    pytest.param("ProviderError", "Server disconnected without sending a response.", 503, id="model-server-reset"),
]
OUTCOMES = [
    pytest.param("HarnessError", "harness 'bash' exited 1: Traceback ... ValueError", None, id="harness-crash"),
    pytest.param("TaskError", "scoring: KeyError: 'answer'", None, id="grader-crash"),
    pytest.param(
        "SandboxError",
        "read 'done.txt': cat: can't open 'done.txt': No such file or directory",
        None,
        id="grader-read-of-a-missing-file",
    ),
    pytest.param("ProviderError", "upstream 404: model 'arena/nope' not found", 404, id="unknown-model"),
    pytest.param("ProviderError", "upstream 500: policy raised", 500, id="model-server-bug"),
    pytest.param("ProviderError", "request timed out", 504, id="model-call-timeout"),
    pytest.param(
        "InterceptionError", "harness 'bash' model connection to interception failed", None, id="interception"
    ),
    pytest.param(
        "RuntimeError", "docker runtime selected but the `docker` CLI is not installed", None, id="no-docker-cli"
    ),
    # What an agent can write: output of its own commands, quoted after a host-written prefix.
    pytest.param(
        "HarnessError",
        "harness 'bash' exited 1: Cannot connect to the Docker daemon at unix:///var/run/docker.sock",
        None,
        id="forged-engine-text-in-harness-output",
    ),
    pytest.param(
        "SandboxError",
        "in the running box: read 'done.txt': Error response from daemon: No such container: x",
        None,
        id="forged-box-gone-in-a-running-box",
    ),
    pytest.param(
        "SandboxError",
        "in the running box: read 'done.txt': error during connect: EOF",
        None,
        id="forged-engine-loss-in-a-running-box",
    ),
    pytest.param(
        "SandboxError",
        "container process signal failed: Cannot connect to the Docker daemon",
        None,
        id="unlisted-operation",
    ),
    pytest.param(
        "EnvError",
        "LeanEnv.run(): RuntimeError: docker runtime selected but the engine is not reachable",
        None,
        id="env-hook-error",
    ),
    pytest.param(
        "HarnessError",
        "docker runtime selected but the engine is not reachable",
        None,
        id="forged-engine-at-start-in-another-error",
    ),
    # The lean runtime's old words, in the type its faults used to share: only the typed fault buys a retry.
    pytest.param(
        "SandboxError",
        "docker runtime selected but the engine is not reachable: Error while fetching server API "
        "version: ('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))",
        None,
        id="lean-wording-without-the-lean-type",
    ),
]


def _state() -> RetryState:
    return RetryState(RetryConfig.model_validate(retries_table()))


@pytest.mark.parametrize(("kind", "message", "status"), INFRA)
def test_an_infrastructure_fault_is_retried(kind, message, status):
    error = Error(type=kind, message=message, status_code=status)
    assert _state().next_error([error]) is error


@pytest.mark.parametrize(("kind", "message", "status"), OUTCOMES)
def test_an_agent_or_grader_outcome_is_never_retried(kind, message, status):
    assert _state().next_error([Error(type=kind, message=message, status_code=status)]) is None


def test_each_fault_has_a_bounded_budget_per_episode():
    state = _state()
    lost = Error(type="SandboxError", message="runtime died under harness 'bash' (exit 137): <no output>")
    budget = next(rule.max_retries for rule in INFRA_RULES if rule.message and "runtime died" in rule.message)
    assert [state.next_error([lost]) is lost for _ in range(budget + 1)] == [True] * budget + [False]


def test_every_eval_config_carries_the_rules_per_episode_and_a_request_can_override_them(tmp_path):
    """Episode-level, because verifiers never retries an agent in a box the env lends it (a lean box)."""
    request = EvalRequest(
        taskset="t", harness="bash", model="m", image="i", base_url="http://x", run_name="r", output_dir=tmp_path
    )
    env = eval_config(request)["env"]
    assert env["retries"] == retries_table()
    assert "retries" not in env["agent"], (
        "no per-agent budget: it would not reach a lean box, and would double a stock one"
    )
    for config in (vf.SingleAgentEnvConfig, LeanEnvConfig):  # what vf-eval validates the table with, either env
        parsed = config.model_validate({"retries": env["retries"]})
        assert [rule.type for rule in parsed.retries.rules] == [rule.type for rule in INFRA_RULES]
        assert parsed.retries.max_retries == 0 and parsed.agent.retries.rules == []
    off = EvalRequest(**{**request.__dict__, "retries": {"max_retries": 0}})
    assert eval_config(off)["env"]["retries"] == {"max_retries": 0}


def test_text_after_a_dead_box_prefix_cannot_buy_the_engine_rules_budget():
    """The tail of "runtime died under harness" quotes the harness's stderr (the agent's): engine
    wording there selects nothing but the box rule, whose budget is the smaller one."""
    state = _state()
    died = Error(
        type="SandboxError", message="runtime died under harness 'bash' (exit 137): Cannot connect to the Docker daemon"
    )
    budget = next(rule.max_retries for rule in INFRA_RULES if rule.message and "runtime died" in rule.message)
    assert sum(state.next_error([died]) is died for _ in range(20)) == budget
