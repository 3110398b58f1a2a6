"""The images build with no registry, rebuild as a no-op, and carry what the harnesses need."""

import hashlib
import subprocess

import pytest

from arena.images import build_images
from arena.images.specs import harness_versions, runner_scripts

pytestmark = pytest.mark.docker


def _run(image: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--label", "arena.managed=true", image, "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_second_build_is_a_no_op(images):
    results = build_images(progress=lambda _line: None)
    assert [r.built for r in results] == [False] * len(results)
    assert {r.name: r.tag for r in results} == images


def test_harness_image_runs_every_tool_offline(images):
    v = harness_versions()
    claude = f"/var/tmp/vf-claude-agent-acp-{v['CLAUDE_VERSION']}-{v['CLAUDE_ACP_VERSION']}/packages/node_modules/.bin/claude"
    codex = f"/var/tmp/vf-codex-{v['CODEX_VERSION']}-{v['CODEX_ACP_VERSION']}/acp/node_modules/.bin/codex"
    script = f"export PATH=/var/tmp/vf-node/bin:$PATH; {claude} --version && {codex} --version && python3 --version && sqlite3 --version && uv --version && node --version"
    result = _run(images["harness"], script)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"{v['CLAUDE_VERSION']} (Claude Code)" in out
    assert "codex-cli" in out
    assert "Python 3." in out and "uv 0." in out
    assert f"v{v['NODE_VERSION']}" in out


def test_runner_scripts_are_locked_and_synced_for_offline_setup(images):
    """What verifiers runs at harness setup must succeed with no network at all."""
    checks = " && ".join(
        f"UV_OFFLINE=false uv sync --script /tmp/vf-scripts/{name} -q --no-config "
        f"&& uv python find --script /tmp/vf-scripts/{name} --no-config >/dev/null"
        for name in runner_scripts()
    )
    result = _run(images["harness"], checks)
    assert result.returncode == 0, result.stderr


def test_harness_image_labels_match_the_installed_verifiers(images):
    import docker

    labels = docker.from_env(version="auto").images.get(images["harness"]).labels
    v = harness_versions()
    assert labels["vf.harness.claude_code.version"] == v["CLAUDE_VERSION"]
    assert labels["vf.harness.codex.version"] == v["CODEX_VERSION"]
    assert labels["vf.node"] == v["NODE_VERSION"]
    assert labels["arena.managed"] == "true"


def test_network_helper_is_tagged_where_verifiers_looks_for_it(images):
    import docker

    client = docker.from_env(version="auto")
    assert client.images.get("localhost/verifiers-network:1").id == client.images.get(images["network"]).id


def test_harness_image_answers_claude_s_auth_probe_itself_and_runs_claude_for_the_rest(images):
    """`.bin/claude` (claude_code's `CLAUDE_CODE_EXECUTABLE`) is the shim: the probe claude-agent-acp
    runs twice per rollout prints without starting the binary, which still answers everything else."""
    v = harness_versions()
    claude = f"/var/tmp/vf-claude-agent-acp-{v['CLAUDE_VERSION']}-{v['CLAUDE_ACP_VERSION']}/packages/node_modules/.bin/claude"
    result = _run(
        images["harness"],
        f"ANTHROPIC_API_KEY=k {claude} auth status --json && head -c 2 {claude} && {claude} --version",
    )
    assert result.returncode == 0, result.stderr
    probe, rest = result.stdout.split("}\n", 1)
    assert '"apiKeySource": "ANTHROPIC_API_KEY"' in probe
    assert rest.startswith("#!") and f"{v['CLAUDE_VERSION']} (Claude Code)" in rest


def test_the_acp_runner_envs_skip_pydantic_field_docstrings(images):
    """Every env synced for verifiers' ACP runner loads `arena_pydantic_no_field_docs` at start-up."""
    from verifiers.v1.acp import ACP_SOURCE

    digest = hashlib.sha256(ACP_SOURCE.encode()).hexdigest()
    check = "from acp.schema import PromptRequest as M; print(M.model_fields['session_id'].description)"
    script = " && ".join(
        f'"$(cat /opt/vf-uv/arena-interpreters/{d}/{digest})" -c "{check}"' for d in ("vf-scripts", "vf-scripts-agent")
    )
    result = _run(images["harness"], script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "None"]
