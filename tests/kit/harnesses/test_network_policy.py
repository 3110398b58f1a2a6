"""verifiers' restricted egress policy, in our image with our network helper: the agent's box
reaches nothing but the proxy — neither an outside host nor a port on the host — while the same
probes succeed under the open policy (the control)."""

import re

import pytest

from arena_kit.scripted import ScriptedPolicy
from arena_kit.policy import Answer, RunShell
from arena.server import start_in_thread
from arena_testkit.rollouts import docker_gateway, http_listener, outside_reach, smoke_eval, tool_results

pytestmark = pytest.mark.docker


def probe_policy(gateway: str, port: int) -> ScriptedPolicy:
    code = "-k -sS -m 5 -o /dev/null -w '%{http_code}'"
    command = (
        f"echo OUTSIDE-DIRECT=$(curl --noproxy '*' {code} https://pypi.org/simple/ 2>/dev/null); "
        f"echo OUTSIDE-PROXY=$(curl {code} https://pypi.org/simple/ 2>/dev/null); "
        f"echo HOSTPORT=$(curl --noproxy '*' {code} http://{gateway}:{port}/ 2>/dev/null); "
        "echo arena-smoke-ok > smoke.txt"
    )
    return ScriptedPolicy([RunShell(command), Answer("DONE")])


def probe(images, tmp_path, runtime_args) -> dict[str, str]:
    gateway = docker_gateway()
    with (
        http_listener(gateway) as port,
        start_in_thread(policies={"arena/netprobe": probe_policy(gateway, port)}) as server,
    ):
        outcome = smoke_eval(
            server.url, "bash", "arena/netprobe", images["harness"], tmp_path, runtime_args=runtime_args
        )
    outcome.raise_for_failures()
    text = "\n".join(tool_results(outcome.run_dir))
    return dict(re.findall(r"(OUTSIDE-DIRECT|OUTSIDE-PROXY|HOSTPORT)=(\d+)", text))


def test_restricted_policy_blocks_outside_hosts_and_host_ports(images, tmp_path):
    seen = probe(images, tmp_path, {"allow": ["example.invalid"]})
    assert seen["OUTSIDE-DIRECT"] == "000"  # no route out except through the proxy
    assert seen["OUTSIDE-PROXY"] in {"000", "403"}  # the proxy refuses hosts not allowed
    assert seen["HOSTPORT"] == "000"  # the host's own ports are cut too


def test_open_policy_reaches_the_host_port_as_a_control(images, tmp_path, egress_lock):
    with outside_reach(egress_lock):  # no other worker's egress cut while the box reaches out
        seen = probe(images, tmp_path, {})
    assert seen["HOSTPORT"] == "200"
    assert seen["OUTSIDE-DIRECT"] == "200"
