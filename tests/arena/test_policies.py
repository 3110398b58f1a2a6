"""Policy resolution by model name: built-ins, explicit registrations and the policies an `arena.environments` declaration names."""

import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from arena.installed import ENVIRONMENTS_GROUP
from arena.policies import (
    STALLER_TEXT,
    PolicyLoadError,
    PolicyResolver,
    UnknownPolicy,
    echo,
    staller,
)
from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, CallTool, Observation, RunShell, Step, ToolSpec, tool_matches
from arena.server import start_in_thread


def observation(steps: tuple[Step, ...] = (), last_user: str = "", prompt: str = "the task") -> Observation:
    return Observation(
        model="arena/test",
        system="",
        prompt=prompt,
        tools=(ToolSpec("bash"),),
        steps=steps,
        dialect="chat",
        last_user=last_user,
    )


def install_fake_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch, env_id: str, body: str, policies: str = "POLICIES"
) -> None:
    """A real (tiny) installed distribution on sys.path: a one-module package (`body`) whose
    `arena.environments` entry point declares `env_id` with its attribute `policies` as the policies."""
    package = env_id.replace("-", "_")
    declared = (
        "from arena_kit.contract import Environment\n"
        f"ENVIRONMENT = Environment(id={env_id!r}, taskset='{package}:Taskset', policies='{package}:{policies}')\n"
    )
    (root / f"{package}.py").write_text(textwrap.dedent(body) + "\n" + declared)
    info = root / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENVIRONMENTS_GROUP}]\n{env_id} = {package}:ENVIRONMENT\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, package, raising=False)


def test_echo_replies_with_the_latest_user_text():
    assert echo(observation(last_user="say this back")) == Answer("say this back")


def test_staller_answers_without_touching_a_tool():
    assert staller(observation()) == Answer(STALLER_TEXT)


def test_scripted_policy_picks_the_action_by_number_of_steps_taken():
    policy = ScriptedPolicy([RunShell("echo hi > f"), CallTool("search_logs", {"q": "x"}), Answer("done")])
    one = (Step(RunShell("echo hi > f"), "ok"),)
    two = one + (Step(CallTool("search_logs", {"q": "x"}), "3 hits"),)
    assert policy(observation()) == RunShell("echo hi > f")
    assert policy(observation(one)) == CallTool("search_logs", {"q": "x"})
    assert policy(observation(two)) == Answer("done")


def test_scripted_policy_answers_once_its_script_is_exhausted():
    policy = ScriptedPolicy([RunShell("true")])
    assert isinstance(policy(observation((Step(RunShell("true"), ""),))), Answer)


def test_tool_names_match_through_mcp_prefixes_only_at_a_separator():
    assert tool_matches("search_logs", "search_logs")
    assert tool_matches("mcp__log_search__search_logs", "search_logs")
    assert tool_matches("log_search_search_logs", "search_logs")
    assert not tool_matches("research_logs", "search_logs")
    assert Step(CallTool("mcp__x__search_logs"), "r").tool_is("search_logs")
    assert not Step(RunShell("search_logs"), "r").tool_is("search_logs")


def test_builtins_resolve_and_explicit_registrations_override_them():
    mine = ScriptedPolicy([Answer("mine")])
    resolver = PolicyResolver({"arena/echo": mine, "custom-name": staller}, entry_points=lambda: ())
    assert resolver.resolve("arena/staller") is staller
    assert resolver.resolve("arena/echo") is mine
    assert resolver.resolve("custom-name") is staller


def test_unknown_model_error_names_the_available_policies():
    resolver = PolicyResolver(entry_points=lambda: ())
    with pytest.raises(UnknownPolicy) as caught:
        resolver.resolve("gpt-4o")
    assert caught.value.available == ["arena/echo", "arena/staller"]
    assert "arena/echo" in str(caught.value)


def test_environment_policies_load_from_an_installed_declaration(tmp_path, monkeypatch):
    install_fake_environment(
        tmp_path,
        monkeypatch,
        "arena-fake-env",
        """
        from arena_kit.policy import Answer, RunShell
        POLICIES = {"oracle": lambda obs: Answer("the answer"), "explorer": lambda obs: RunShell("ls")}
        """,
    )
    resolver = PolicyResolver()
    assert resolver.resolve("arena/arena-fake-env/oracle")(observation()) == Answer("the answer")
    assert resolver.resolve("arena/arena-fake-env/explorer")(observation()) == RunShell("ls")
    assert resolver.environment_policies("arena-fake-env") == ["oracle", "explorer"]
    assert {"arena/arena-fake-env/oracle", "arena/arena-fake-env/explorer"} <= set(resolver.available())
    with pytest.raises(UnknownPolicy):
        resolver.resolve("arena/arena-fake-env/missing")


def test_a_declaration_may_name_a_factory_returning_the_policies(tmp_path, monkeypatch):
    install_fake_environment(
        tmp_path,
        monkeypatch,
        "arena-fake-factory",
        """
        from arena_kit.policy import Answer
        def policies():
            return {"oracle": lambda obs: Answer("from a factory")}
        """,
        policies="policies",
    )
    assert PolicyResolver().resolve("arena/arena-fake-factory/oracle")(observation()) == Answer("from a factory")


@pytest.mark.parametrize(
    ("body", "says"),
    [("POLICIES = ['not', 'a', 'dict']", "must give a dict"), ("import no_such_module_x", "failed to load")],
    ids=["wrong-shape", "import-error"],
)
def test_a_broken_environment_is_a_load_error_and_is_left_out_of_the_listing(tmp_path, monkeypatch, body, says):
    install_fake_environment(tmp_path, monkeypatch, "arena-fake-broken", body)
    resolver = PolicyResolver()
    with pytest.raises(PolicyLoadError, match=f"arena-fake-broken.*{says}"):
        resolver.resolve("arena/arena-fake-broken/oracle")
    assert not any("arena-fake-broken" in name for name in resolver.available())


def test_the_server_answers_an_environment_policy_by_its_model_name(tmp_path, monkeypatch):
    install_fake_environment(
        tmp_path,
        monkeypatch,
        "arena-fake-served",
        """
        from arena_kit.policy import Answer
        POLICIES = {"oracle": lambda obs: Answer("oracle saw: " + obs.prompt)}
        """,
    )
    body = {"model": "arena/arena-fake-served/oracle", "messages": [{"role": "user", "content": "task 7"}]}
    with start_in_thread() as server:
        reply = httpx.post(server.url + "/v1/chat/completions", json=body)
    assert reply.json()["choices"][0]["message"]["content"] == "oracle saw: task 7"
